import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { ensureTestModels, TINY_QWEN2_TOOLS } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

/** About 10,000 tokens of tiny-qwen2-tools' vocabulary (≈ 10.4 tokens per sentence). */
const LONG_TEXT = Array.from({ length: 960 }, (_, i) => `The quick brown fox ${i} jumps.`).join(' ');

/** The context of the loaded runners (`/api/ps` context_length), tokens. */
async function loadedContexts(baseUrl: string): Promise<number[]> {
  const res = await fetch(`${baseUrl}/api/ps`);
  const body = (await res.json()) as { models: Array<{ context_length: number }> };
  return body.models.map((m) => m.context_length);
}

// Issue 12 §5: the compat layers never cut a prompt. tiny-qwen2-tools (trained context 32,768) is loaded with the
// default 4,096-token context (no OLLAMA_CONTEXT_LENGTH); a ~10k-token /v1/messages prompt reloads it with a larger
// context and the answer is computed on the whole prompt.
describe('a 10k-token prompt on the compat layers grows the context (real addon)', { skip: addon.skip }, () => {
  let t: TestApp;
  let anthropic: Anthropic;
  let openai: OpenAI;

  before(async () => {
    ensureTestModels();
    assert.ok(existsSync(TINY_QWEN2_TOOLS), 'tiny-qwen2-tools is generated (npm run models)');
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 0 } });
    anthropic = new Anthropic({ baseURL: t.baseUrl, apiKey: 'x', maxRetries: 0, timeout: 300_000 });
    openai = new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: 'x', maxRetries: 0, timeout: 300_000 });
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: 'long',
      modelfile: `FROM ${TINY_QWEN2_TOOLS}\nPARAMETER temperature 0`,
      stream: false,
    });
    assert.equal(res.status, 200, await res.text());
    // Load it with the default context first, as a daemon would have it after a short request.
    const warm = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'long',
      prompt: 'hi',
      stream: false,
      options: { num_predict: 1 },
    });
    assert.equal(warm.status, 200);
    await warm.text();
    assert.deepEqual(await loadedContexts(t.baseUrl), [4096]);
  });

  after(() => t?.close());

  it('/v1/messages: usage covers the whole ~10k-token prompt (no truncation), count_tokens agrees', async () => {
    const body = {
      model: 'long',
      max_tokens: 4,
      system: [{ type: 'text' as const, text: 'Summarize the text.' }],
      messages: [{ role: 'user' as const, content: LONG_TEXT }],
    };
    const msg = await anthropic.messages.create(body);
    const prompt = msg.usage.input_tokens + (msg.usage.cache_read_input_tokens ?? 0);
    assert.ok(prompt > 9_000 && prompt < 11_000, `prompt of ${prompt} tokens`);
    assert.equal(msg.usage.output_tokens, 4);
    assert.equal(msg.stop_reason, 'max_tokens');
    const [ctx] = await loadedContexts(t.baseUrl);
    assert.ok(ctx > prompt, `reloaded with a ${ctx}-token context`);

    const { max_tokens: _maxTokens, ...countBody } = body;
    const counted = await anthropic.messages.countTokens(countBody);
    assert.equal(counted.input_tokens, prompt);
    assert.deepEqual(await loadedContexts(t.baseUrl), [ctx], 'count_tokens reuses the larger context');

    // The same request streamed: message_start already has the whole prompt, and the prefix is reused.
    const stream = anthropic.messages.stream(body);
    let startSum = -1;
    stream.on('streamEvent', (e) => {
      if (e.type === 'message_start') {
        startSum = e.message.usage.input_tokens + (e.message.usage.cache_read_input_tokens ?? 0);
      }
    });
    const final = await stream.finalMessage();
    assert.equal(startSum, prompt);
    assert.equal(final.usage.input_tokens + (final.usage.cache_read_input_tokens ?? 0), prompt);
    assert.ok((final.usage.cache_read_input_tokens ?? 0) > 9_000, 'the long prefix came from the KV cache');
  });

  it('/v1/chat/completions and /v1/completions keep the whole prompt too', async () => {
    const chat = await openai.chat.completions.create({
      model: 'long',
      max_tokens: 2,
      messages: [{ role: 'user', content: LONG_TEXT }],
    });
    assert.ok((chat.usage?.prompt_tokens ?? 0) > 9_000, `chat prompt ${chat.usage?.prompt_tokens}`);
    const completion = await openai.completions.create({ model: 'long', max_tokens: 2, prompt: LONG_TEXT });
    assert.ok((completion.usage?.prompt_tokens ?? 0) > 9_000, `completion prompt ${completion.usage?.prompt_tokens}`);
  });
});
