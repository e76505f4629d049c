import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import OpenAI, { BadRequestError } from 'openai';
import { missingAudioTools, speech } from '../utils/audio-fixtures';
import { ensureTestModels, TINY_AUDIO_MMPROJ, TINY_LLAMA_SPM } from '../utils/models';
import { createModel } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
/** qwen2a: a clip under 30 s is one chunk of 750 audio embeddings. */
const QWEN2A_TOKENS_PER_CHUNK = 750;

function skipReason(): string | undefined {
  if (addon.skip) return addon.skip;
  if (!existsSync(TINY_AUDIO_MMPROJ)) return `${TINY_AUDIO_MMPROJ} not generated: run scripts/make-test-models`;
  return missingAudioTools();
}

// `input_audio` parts through the official `openai` client (issue 38; reference/shared-service.md §6): chat
// completions and the Responses API, on tiny-audio (tiny-llama-spm + the random qwen2a projector). The audio tokens
// show in usage; the refusals are 400 `invalid_request_error`s the client raises as BadRequestError.
describe('input_audio with the official openai client', { skip: skipReason() }, () => {
  let t: TestApp;
  let client: OpenAI;
  const clips: Partial<Record<'wav' | 'mp3', string>> = {};

  before(async () => {
    ensureTestModels();
    for (const format of ['wav', 'mp3'] as const) {
      clips[format] = (await speech('good morning', format)).toString('base64');
    }
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 4096 } });
    client = new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: 'x', maxRetries: 0 });
    await createModel(t.baseUrl, 'tiny-audio', `FROM ${TINY_LLAMA_SPM}\nFROM ${TINY_AUDIO_MMPROJ}\n`);
    await createModel(t.baseUrl, 'tiny-text', `FROM ${TINY_LLAMA_SPM}\n`);
  });

  after(() => t?.close());

  it('chat.completions: an input_audio part (wav, mp3) answers, its tokens counted in usage.prompt_tokens', async () => {
    const ask = (content: OpenAI.Chat.ChatCompletionUserMessageParam['content']) =>
      client.chat.completions.create({
        model: 'tiny-audio',
        messages: [{ role: 'user', content }],
        max_tokens: 6,
        temperature: 0,
        seed: 1,
      });
    const text = await ask([{ type: 'text', text: 'What was said?' }]);
    for (const format of ['wav', 'mp3'] as const) {
      const res = await ask([
        { type: 'text', text: 'What was said?' },
        { type: 'input_audio', input_audio: { data: clips[format]!, format } },
      ]);
      assert.equal(res.object, 'chat.completion');
      assert.equal(typeof res.choices[0].message.content, 'string');
      assert.equal(res.usage?.completion_tokens, 6);
      const extra = res.usage!.prompt_tokens - text.usage!.prompt_tokens;
      assert.ok(extra >= QWEN2A_TOKENS_PER_CHUNK, `${format}: ${extra} more prompt tokens`);
    }
  });

  it('chat.completions streams with input_audio and reports usage at the end', async () => {
    const stream = await client.chat.completions.create({
      model: 'tiny-audio',
      messages: [
        { role: 'user', content: [{ type: 'input_audio', input_audio: { data: clips.wav!, format: 'wav' } }] },
      ],
      max_tokens: 4,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let prompt = 0;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) prompt = chunk.usage.prompt_tokens;
    }
    assert.ok(text.length > 0);
    assert.ok(prompt >= QWEN2A_TOKENS_PER_CHUNK, `prompt_tokens ${prompt}`);
  });

  it('responses: an input_audio part in a message answers, audio tokens in usage.input_tokens', async () => {
    const plain = await client.responses.create({ model: 'tiny-audio', input: 'Transcribe.', max_output_tokens: 6 });
    const res = await client.responses.create({
      model: 'tiny-audio',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Transcribe.' },
            // the SDK's ResponseInputContent union does not list input_audio yet; the wire shape is ResponseInputAudio
            { type: 'input_audio', input_audio: { data: clips.wav!, format: 'wav' } } as never,
          ],
        },
      ],
      max_output_tokens: 6,
    });
    assert.equal(res.status, 'incomplete');
    assert.equal(typeof res.output_text, 'string');
    assert.ok(res.usage!.input_tokens - plain.usage!.input_tokens >= QWEN2A_TOKENS_PER_CHUNK);
  });

  it('refusals: unknown format, missing data, corrupt bytes, a model without an audio encoder', async () => {
    const refused = async (model: string, part: unknown, text: RegExp) => {
      await assert.rejects(
        client.chat.completions.create({
          model,
          messages: [{ role: 'user', content: [part as OpenAI.Chat.ChatCompletionContentPart] }],
          max_tokens: 2,
        }),
        (e: unknown) => e instanceof BadRequestError && e.status === 400 && text.test(e.message),
      );
    };
    const audio = (data: string, format: string) => ({ type: 'input_audio', input_audio: { data, format } });
    await refused(
      'tiny-audio',
      audio(clips.wav!, 'ogg'),
      /invalid input_audio format: "ogg" \(supported: wav, mp3, flac\)/,
    );
    await refused('tiny-audio', { type: 'input_audio', input_audio: { format: 'wav' } }, /missing data/);
    await refused('tiny-audio', audio(Buffer.from('just text').toString('base64'), 'wav'), /not a WAV, MP3 or FLAC/);
    await refused('tiny-text', audio(clips.wav!, 'wav'), /this model is missing data required for audio input/);
    await assert.rejects(
      client.responses.create({
        model: 'tiny-audio',
        input: [{ role: 'user', content: [audio(clips.wav!, 'aac') as never] }],
      }),
      (e: unknown) => e instanceof BadRequestError && /supported: wav, mp3, flac/.test(e.message),
    );
  });
});
