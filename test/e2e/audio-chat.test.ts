import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { missingAudioTools, speech, tone } from '../utils/audio-fixtures';
import { spawnDaemon } from '../utils/daemon-process';
import { ensureTestModels, TINY_AUDIO_MMPROJ, TINY_LLAMA_SPM, TINY_MMPROJ, TINY_OMNI_MMPROJ } from '../utils/models';
import { createModel, postJson } from '../utils/ndjson';
import { testPng } from '../utils/png';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const GREEDY = { temperature: 0, seed: 42, num_predict: 8 };
/** qwen2a: a clip under 30 s is one 3000-frame chunk → 1500 encoder positions, average-pooled to 750 embeddings. */
const QWEN2A_TOKENS_PER_CHUNK = 750;
const NO_AUDIO = 'this model is missing data required for audio input';

function skipReason(): string | undefined {
  if (addon.skip) return addon.skip;
  const missing = [TINY_AUDIO_MMPROJ, TINY_OMNI_MMPROJ].filter((p) => !existsSync(p));
  if (missing.length > 0) return `audio projectors not generated (${missing.join(', ')}): run scripts/make-test-models`;
  return missingAudioTools();
}

const skip = skipReason();

// Audio in /api/chat and /api/generate end to end (issue 38) with the REAL addon: tiny-llama-spm plus the random
// qwen2a projector (tiny-audio) or the vision+audio projector (tiny-omni), clips spoken by espeak-ng at test time.
// Random weights answer gibberish: the tests judge the protocol, the audio token counts and that the audio reaches
// the model (different clips → different greedy logits).
describe('audio in /api/chat and /api/generate with the real addon', { skip }, () => {
  let t: TestApp;
  let ollama: Ollama;
  let hello: string;
  let weather: string;
  const png = testPng().toString('base64');

  before(async () => {
    ensureTestModels();
    [hello, weather] = (await Promise.all([speech('hello world'), speech('what is the weather like in Oslo')])).map(
      (b) => b.toString('base64'),
    );
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 4096 } });
    ollama = new Ollama({ host: t.baseUrl });
    await createModel(t.baseUrl, 'tiny-audio', `FROM ${TINY_LLAMA_SPM}\nFROM ${TINY_AUDIO_MMPROJ}\n`);
    await createModel(t.baseUrl, 'tiny-omni', `FROM ${TINY_LLAMA_SPM}\nFROM ${TINY_OMNI_MMPROJ}\n`);
    await createModel(t.baseUrl, 'tiny-vision', `FROM ${TINY_LLAMA_SPM}\nFROM ${TINY_MMPROJ}\n`);
    await createModel(t.baseUrl, 'tiny-text', `FROM ${TINY_LLAMA_SPM}\n`);
  });

  after(() => t?.close());

  it('show lists audio for an audio projector, both for tiny-omni, only vision for tiny-vision', async () => {
    const caps = async (model: string) => (await ollama.show({ model })).capabilities;
    assert.deepEqual(await caps('tiny-audio'), ['completion', 'audio']);
    assert.deepEqual(await caps('tiny-omni'), ['completion', 'vision', 'audio']);
    assert.deepEqual(await caps('tiny-vision'), ['completion', 'vision']);
    assert.deepEqual(await caps('tiny-text'), ['completion']);
  });

  it('/api/chat with audio answers; each clip adds its 750 audio tokens to prompt_eval_count', async () => {
    const chat = (audio?: string[]) =>
      postJson(`${t.baseUrl}/api/chat`, {
        model: 'tiny-audio',
        messages: [{ role: 'user', content: 'What is said?', ...(audio ? { audio } : {}) }],
        options: GREEDY,
        stream: false,
      }).then(async (r) => {
        assert.equal(r.status, 200, await r.clone().text());
        return (await r.json()) as { done: boolean; eval_count: number; prompt_eval_count: number };
      });
    const none = await chat();
    const one = await chat([hello]);
    const two = await chat([hello, weather]);
    assert.equal(one.done, true);
    assert.equal(one.eval_count, GREEDY.num_predict);
    const perClip = one.prompt_eval_count - none.prompt_eval_count;
    // 750 embeddings plus the projector's audio begin/end markers as text, the same for every clip
    assert.ok(perClip >= QWEN2A_TOKENS_PER_CHUNK && perClip < QWEN2A_TOKENS_PER_CHUNK + 32, `per clip ${perClip}`);
    assert.equal(two.prompt_eval_count - one.prompt_eval_count, perClip);
  });

  it('different clips give different greedy logits; the same clip the same ones', async () => {
    const run = async (audio: string) => {
      const r = await postJson(`${t.baseUrl}/api/chat`, {
        model: 'tiny-audio',
        messages: [{ role: 'user', content: 'Repeat it.', audio: [audio] }],
        options: GREEDY,
        logprobs: true,
        stream: false,
      });
      assert.equal(r.status, 200, await r.clone().text());
      const body = (await r.json()) as { message: { content: string }; logprobs: { logprob: number }[] };
      return { content: body.message.content, logprobs: body.logprobs.map((l) => l.logprob) };
    };
    // Each run on a freshly loaded model, so that the same clip is evaluated in the same batches: a run that reused
    // the cached prompt would re-evaluate its last token alone, and batched and single-token decodes need not agree
    // to the last bit (on AVX-512 kernels they move these logprobs by 1e-3, as much as random weights let the audio
    // move them).
    const fresh = async (audio: string) => {
      const r = await postJson(`${t.baseUrl}/api/generate`, { model: 'tiny-audio', keep_alive: 0 });
      assert.equal(r.status, 200, await r.clone().text());
      return run(audio);
    };
    const a = await fresh(hello);
    const again = await fresh(hello);
    const b = await fresh(weather);
    const maxDiff = (x: number[]) => Math.max(...x.map((lp, i) => Math.abs(lp - a.logprobs[i])));
    assert.equal(again.content, a.content);
    assert.deepEqual(again.logprobs, a.logprobs, 'the same clip, the same logprobs');
    assert.ok(maxDiff(b.logprobs) > 1e-4, `other clip moved the logprobs by ${maxDiff(b.logprobs)} only`);
  });

  it('/api/generate takes audio too (mp3 and flac as well as wav)', async () => {
    const text = await ollama.generate({ model: 'tiny-audio', prompt: 'Transcribe:', options: GREEDY });
    for (const format of ['wav', 'mp3', 'flac'] as const) {
      const clip = (await speech('hello world', format)).toString('base64');
      const r = await postJson(`${t.baseUrl}/api/generate`, {
        model: 'tiny-audio',
        prompt: 'Transcribe:',
        audio: [clip],
        options: GREEDY,
        stream: false,
      });
      assert.equal(r.status, 200, `${format}: ${await r.clone().text()}`);
      const body = (await r.json()) as { done: boolean; prompt_eval_count: number };
      assert.equal(body.done, true);
      assert.ok(body.prompt_eval_count >= text.prompt_eval_count + QWEN2A_TOKENS_PER_CHUNK, format);
    }
  });

  it('an image and an audio clip in one message on tiny-omni', async () => {
    const count = async (extra: { images?: string[]; audio?: string[] }) => {
      const r = await postJson(`${t.baseUrl}/api/chat`, {
        model: 'tiny-omni',
        messages: [{ role: 'user', content: 'Describe both.', ...extra }],
        options: GREEDY,
        stream: false,
      });
      assert.equal(r.status, 200, await r.clone().text());
      return ((await r.json()) as { prompt_eval_count: number }).prompt_eval_count;
    };
    const none = await count({});
    const image = await count({ images: [png] });
    const audio = await count({ audio: [hello] });
    const both = await count({ images: [png], audio: [hello] });
    assert.ok(image > none && audio - none >= QWEN2A_TOKENS_PER_CHUNK, `${none} ${image} ${audio}`);
    assert.equal(both - none, image - none + (audio - none));
  });

  it("audio sent in `images`, as Ollama's clients do, reaches the audio encoder", async () => {
    const r = await postJson(`${t.baseUrl}/api/chat`, {
      model: 'tiny-audio',
      messages: [{ role: 'user', content: 'What is said?', images: [hello] }],
      options: GREEDY,
      stream: false,
    });
    assert.equal(r.status, 200, await r.clone().text());
    const body = (await r.json()) as { prompt_eval_count: number };
    assert.ok(body.prompt_eval_count >= QWEN2A_TOKENS_PER_CHUNK, `${body.prompt_eval_count}`);
    const image = await postJson(`${t.baseUrl}/api/chat`, {
      model: 'tiny-audio',
      messages: [{ role: 'user', content: 'What is it?', images: [png] }],
      stream: false,
    });
    assert.equal(image.status, 400);
    assert.match(await image.text(), /missing data required for image input/);
  });

  it('refusals: no audio encoder, unknown bytes, bad base64, corrupt audio', async () => {
    const refused = async (path: string, body: Record<string, unknown>, text: RegExp) => {
      const r = await postJson(`${t.baseUrl}${path}`, { stream: false, ...body });
      const got = await r.text();
      assert.equal(r.status, 400, got);
      assert.match((JSON.parse(got) as { error: string }).error, text);
    };
    const msg = (model: string, audio: string[]) => ({ model, messages: [{ role: 'user', content: 'hi', audio }] });
    await refused('/api/chat', msg('tiny-text', [hello]), new RegExp(`^${NO_AUDIO}$`));
    await refused('/api/chat', msg('tiny-vision', [hello]), new RegExp(`^${NO_AUDIO}$`));
    await refused('/api/generate', { model: 'tiny-text', prompt: 'hi', audio: [hello] }, new RegExp(`^${NO_AUDIO}$`));
    await refused('/api/chat', msg('tiny-audio', [png]), /audio\[0\] is not a WAV, MP3 or FLAC file/);
    await refused('/api/chat', msg('tiny-audio', ['%%%not base64']), /audio\[0\] is not valid base64/);
    await refused('/api/chat', msg('tiny-audio', ['']), /audio\[0\] is empty/);
    // a WAV header over garbage: the engine's decoder refuses it (400), and the runner serves on
    const corrupt = Buffer.concat([Buffer.from('RIFF\x24\x00\x00\x00WAVEjunk', 'latin1'), Buffer.alloc(64, 7)]);
    const r = await postJson(`${t.baseUrl}/api/chat`, {
      ...msg('tiny-audio', [corrupt.toString('base64')]),
      stream: false,
    });
    assert.equal(r.status, 400, await r.text());
    const ok = await ollama.chat({
      model: 'tiny-audio',
      messages: [{ role: 'user', content: 'hi', audio: [hello] } as { role: string; content: string }],
      options: GREEDY,
    });
    assert.equal(ok.done, true);
  });
});

// LLAMAD_MAX_AUDIO_SECONDS read from the environment of a real daemon process and enforced by the engine.
describe('LLAMAD_MAX_AUDIO_SECONDS', { skip }, () => {
  let store: string;
  let daemon: Awaited<ReturnType<typeof spawnDaemon>> | undefined;

  before(async () => {
    store = await mkdtemp(join(tmpdir(), 'llamad-audio-limit-'));
    daemon = await spawnDaemon(store, { LLAMAD_MAX_AUDIO_SECONDS: '5', OLLAMA_CONTEXT_LENGTH: '4096' });
    await createModel(daemon.base, 'tiny-audio', `FROM ${TINY_LLAMA_SPM}\nFROM ${TINY_AUDIO_MMPROJ}\n`);
  });

  after(async () => {
    await daemon?.kill();
    await rm(store, { recursive: true, force: true });
  });

  it('a clip over the limit is a 400 naming the limit; a shorter one is answered', async () => {
    const chat = async (clip: Buffer) =>
      postJson(`${daemon!.base}/api/chat`, {
        model: 'tiny-audio',
        messages: [{ role: 'user', content: 'hi', audio: [clip.toString('base64')] }],
        options: GREEDY,
        stream: false,
      });
    const long = await chat(await tone(7));
    const text = await long.text();
    assert.equal(long.status, 400, text);
    assert.match(text, /the limit is 5 s \(LLAMAD_MAX_AUDIO_SECONDS\)/);
    const short = await chat(await tone(3));
    assert.equal(short.status, 200, await short.text());
  });
});
