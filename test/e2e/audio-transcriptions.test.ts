import assert from 'node:assert/strict';
import { createReadStream, existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI, { APIError, BadRequestError, NotFoundError, toFile } from 'openai';
import { missingAudioTools, speech, tone, whisperChunks } from '../utils/audio-fixtures';
import { ensureTestModels, TINY_AUDIO_MMPROJ, TINY_LLAMA_SPM } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const skip =
  addon.skip ??
  missingAudioTools() ??
  (existsSync(TINY_AUDIO_MMPROJ) ? undefined : `${TINY_AUDIO_MMPROJ} is missing: run scripts/make-test-models`);

/** Embeddings tiny-audio-mmproj (qwen2a) makes of one 30 s chunk. */
const AUDIO_TOKENS_PER_CHUNK = 750;

type TokenUsage = {
  type: string;
  input_tokens: number;
  input_token_details: { text_tokens: number; audio_tokens: number };
  output_tokens: number;
  total_tokens: number;
};

/** Usage in OpenAI's token shape, with the audio embeddings counted (≥ 750 per chunk of the clip). */
function assertTokenUsage(usage: TokenUsage | undefined, chunks = 1): void {
  assert.ok(usage, 'usage');
  assert.equal(usage.type, 'tokens');
  const { text_tokens, audio_tokens } = usage.input_token_details;
  assert.ok(text_tokens > 10, `text tokens ${text_tokens}`);
  // The audio's embeddings, plus the few text tokens mtmd wraps them in (<|audio_bos|>, <|audio_eos|>).
  assert.ok(audio_tokens >= AUDIO_TOKENS_PER_CHUNK * chunks, `audio tokens ${audio_tokens}`);
  assert.ok(audio_tokens <= AUDIO_TOKENS_PER_CHUNK * chunks + 32, `audio tokens ${audio_tokens}`);
  assert.equal(usage.input_tokens, text_tokens + audio_tokens);
  assert.ok(usage.output_tokens >= 1);
  assert.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
}

// POST /v1/audio/transcriptions and /v1/audio/translations (shared-service.md §6; reference/ollama-api.md §12.7) with
// the REAL addon and the official `openai` client, on tiny-llama-spm + the random qwen2a projector tiny-audio-mmproj:
// random weights give gibberish, so the protocol, shapes and token counts are judged, not the words.
describe('OpenAI audio transcriptions and translations (official client, real addon)', { skip }, () => {
  let t: TestApp;
  let client: OpenAI;
  let wav: Buffer;
  let dir: string;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({
      binding: addon.binding,
      config: { numParallel: 1, contextLength: 2048, maxAudioSeconds: 60 },
    });
    client = new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: 'x', maxRetries: 0, timeout: 120_000 });
    for (const [model, modelfile] of [
      // A short answer bound keeps the random model's gibberish short (the route's own bound is 448 per 30 s).
      ['tiny-audio', `FROM ${TINY_LLAMA_SPM}\nFROM ${TINY_AUDIO_MMPROJ}\nPARAMETER num_predict 8\n`],
      ['tiny-text', `FROM ${TINY_LLAMA_SPM}\n`],
    ]) {
      const res = await postJson(`${t.baseUrl}/api/create`, { model, modelfile, stream: false });
      assert.equal(res.status, 200, model);
    }
    wav = await speech('hello world, this is a test');
    dir = await mkdtemp(join(tmpdir(), 'llamad-transcribe-'));
    await writeFile(join(dir, 'hello.wav'), wav);
  });

  after(async () => {
    await t?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('json (default) from a file stream: text and token usage with the audio embeddings', async () => {
    const res = await client.audio.transcriptions.create({
      file: createReadStream(join(dir, 'hello.wav')),
      model: 'tiny-audio',
    });
    assert.equal(typeof res.text, 'string');
    assertTokenUsage(res.usage as TokenUsage, whisperChunks(1.5));
  });

  it('text, srt and vtt with toFile: the text, one cue over the clip', async () => {
    const text = await client.audio.transcriptions.create({
      file: await toFile(wav, 'a.wav'),
      model: 'tiny-audio',
      response_format: 'text',
    });
    assert.equal(typeof text, 'string');
    const srt = await client.audio.transcriptions.create({
      file: await toFile(wav, 'a.wav'),
      model: 'tiny-audio',
      response_format: 'srt',
    });
    assert.match(srt, /^1\n00:00:00,000 --> 00:00:0\d,\d{3}\n/);
    const vtt = await client.audio.transcriptions.create({
      file: await toFile(wav, 'a.wav'),
      model: 'tiny-audio',
      response_format: 'vtt',
    });
    assert.match(vtt, /^WEBVTT\n\n00:00:00\.000 --> 00:00:0\d\.\d{3}\n/);
  });

  it('verbose_json: task, language, duration from the header, one segment with the text’s tokens', async () => {
    const res = await client.audio.transcriptions.create({
      file: await toFile(await speech('hello world, this is a test', 'mp3'), 'a.mp3'),
      model: 'tiny-audio',
      response_format: 'verbose_json',
      language: 'en',
      timestamp_granularities: ['segment'],
    });
    assert.equal((res as unknown as { task: string }).task, 'transcribe');
    assert.equal(res.language, 'english');
    assert.ok(res.duration > 1 && res.duration < 5, String(res.duration));
    assert.equal(res.segments?.length, 1);
    const [segment] = res.segments ?? [];
    assert.equal(segment.start, 0);
    assert.equal(segment.end, res.duration);
    assert.equal(segment.text, res.text);
    assert.ok(Array.isArray(segment.tokens) && segment.tokens.every((id) => Number.isInteger(id)));
    assert.ok(segment.avg_logprob <= 0);
    assert.deepEqual(res.usage, { type: 'duration', seconds: Math.ceil(res.duration) });
  });

  it('FLAC and include[] logprobs: one logprob per output token', async () => {
    const res = await client.audio.transcriptions.create({
      file: await toFile(await speech('hello world, this is a test', 'flac'), 'a.flac'),
      model: 'tiny-audio',
      include: ['logprobs'],
    });
    assertTokenUsage(res.usage as TokenUsage);
    assert.ok(res.logprobs && res.logprobs.length >= 1);
    assert.ok(res.logprobs.every((lp) => typeof lp.token === 'string' && (lp.logprob ?? 1) <= 0));
  });

  it('stream: transcript.text.delta events, then transcript.text.done with the whole text and usage', async () => {
    const stream = await client.audio.transcriptions.create({
      file: await toFile(wav, 'a.wav'),
      model: 'tiny-audio',
      stream: true,
    });
    let deltas = '';
    const types: string[] = [];
    let done: { text: string; usage?: unknown } | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'transcript.text.delta') deltas += event.delta;
      if (event.type === 'transcript.text.done') done = event;
    }
    assert.ok(types.length >= 2 && types[0] === 'transcript.text.delta', types.join(','));
    assert.equal(types.at(-1), 'transcript.text.done');
    assert.ok(done);
    assert.equal(done.text, deltas.trim());
    assertTokenUsage(done.usage as TokenUsage);
  });

  it('translations: verbose_json (task translate, language english)', async () => {
    const verbose = (await client.audio.translations.create({
      file: await toFile(wav, 'a.wav'),
      model: 'tiny-audio',
      response_format: 'verbose_json',
    })) as OpenAI.Audio.TranslationVerbose & { task?: string };
    assert.equal(verbose.task, 'translate');
    assert.equal(typeof verbose.text, 'string');
    assert.equal(verbose.language, 'english');
    assert.equal(verbose.segments?.length, 1);
  });

  it('refusals: text-only model, unknown model, missing file, empty file, non-audio bytes, bad format, too long, too large, foreign origin', async () => {
    const refused = async (promise: Promise<unknown>, status: number, message: string | RegExp) => {
      await assert.rejects(promise, (err: unknown) => {
        assert.ok(err instanceof APIError, String(err));
        assert.equal(err.status, status);
        if (typeof message === 'string') assert.equal(err.message.replace(/^\d+ /, ''), message);
        else assert.match(err.message, message);
        return true;
      });
    };
    await refused(
      client.audio.transcriptions.create({ file: await toFile(wav, 'a.wav'), model: 'tiny-text' }),
      400,
      'this model is missing data required for audio input',
    );
    await assert.rejects(
      client.audio.transcriptions.create({ file: await toFile(wav, 'a.wav'), model: 'nope' }),
      NotFoundError,
    );
    const form = new FormData();
    form.append('model', 'tiny-audio');
    const missing = await fetch(`${t.baseUrl}/v1/audio/transcriptions`, { method: 'POST', body: form });
    assert.equal(missing.status, 400);
    assert.equal(
      ((await missing.json()) as { error: { message: string } }).error.message,
      'file is required: http: no such file',
    );
    await refused(
      client.audio.transcriptions.create({ file: await toFile(Buffer.alloc(0), 'a.wav'), model: 'tiny-audio' }),
      400,
      'audio file is empty',
    );
    await refused(
      client.audio.transcriptions.create({
        file: await toFile(Buffer.from('not audio at all'), 'a.wav'),
        model: 'tiny-audio',
      }),
      400,
      'unsupported audio format: send WAV, MP3 or FLAC',
    );
    await assert.rejects(
      client.audio.transcriptions.create({
        file: await toFile(wav, 'a.wav'),
        model: 'tiny-audio',
        response_format: 'diarized_json',
      }),
      BadRequestError,
    );
    await refused(
      client.audio.transcriptions.create({ file: await toFile(await tone(61), 'long.wav'), model: 'tiny-audio' }),
      400,
      'audio is 61 s long; the limit is 60 s (LLAMAD_MAX_AUDIO_SECONDS)',
    );
    const big = Buffer.concat([wav, Buffer.alloc(26 * 1024 * 1024)]);
    await refused(
      client.audio.transcriptions.create({ file: await toFile(big, 'big.wav'), model: 'tiny-audio' }),
      413,
      /too large/,
    );
    // A browser page of another origin is refused before the body is read (the request gate, docs/security.md).
    const upload = new FormData();
    upload.append('model', 'tiny-audio');
    upload.append('file', new Blob([wav]), 'a.wav');
    const foreign = await fetch(`${t.baseUrl}/v1/audio/transcriptions`, {
      method: 'POST',
      body: upload,
      headers: { origin: 'https://evil.example' },
    });
    assert.equal(foreign.status, 403);
    await foreign.arrayBuffer();
    // The daemon still answers after refusing an upload half-read (its connection was closed, not left hanging).
    const models = await client.models.list();
    assert.ok(models.data.some((m) => m.id.startsWith('tiny-audio')));
  });
});
