import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
/** A 64-token context and more tokens than it holds; greedy, so the random-weight model's output is repeatable. */
const OPTIONS = { temperature: 0, seed: 42, num_ctx: 64, num_predict: 200 };

// Context shift end to end (Ollama's `shift`, reference §4.4): with the real addon and tiny-qwen2, a generation longer
// than num_ctx goes on past the full context by default and stops there with `shift: false`.
describe('context shift with the real addon', { skip: addon.skip }, () => {
  let t: TestApp;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 512 } });
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: 'tiny',
      modelfile: `FROM ${TINY_QWEN2}\nPARAMETER temperature 0`,
      stream: false,
    });
    assert.equal(res.status, 200);
  });

  after(() => t?.close());

  async function generate(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const res = await postJson(`${t.baseUrl}/api/generate`, { model: 'tiny', stream: false, ...body });
    assert.equal(res.status, 200);
    return (await res.json()) as Record<string, unknown>;
  }

  it('num_ctx 64 is honoured: the loaded context holds 64 tokens', async () => {
    await generate({ prompt: 'Hi', options: { ...OPTIONS, num_predict: 1 } });
    const ps = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as { models: { context_length: number }[] };
    assert.equal(ps.models[0]?.context_length, 64);
  });

  it('generate: shift (the default) goes past the full context up to num_predict', async () => {
    const r = await generate({ prompt: 'Tell me a long story about a llama.', options: OPTIONS });
    assert.equal(r.done_reason, 'length');
    assert.equal(r.eval_count, 200);
    const promptTokens = r.prompt_eval_count as number;
    assert.ok(promptTokens > 0 && promptTokens < 64, `prompt_eval_count ${promptTokens}`);
    const again = await generate({ prompt: 'Tell me a long story about a llama.', options: OPTIONS, shift: true });
    assert.equal(again.eval_count, 200);
    assert.equal(again.prompt_eval_count, promptTokens);
    assert.equal(again.response, r.response);
  });

  it('generate: shift false stops at the full context with done_reason length', async () => {
    const r = await generate({ prompt: 'Tell me a long story about a llama.', options: OPTIONS, shift: false });
    assert.equal(r.done_reason, 'length');
    const promptTokens = r.prompt_eval_count as number;
    // Every sampled token but the last is decoded: prompt + (eval_count - 1) = num_ctx.
    assert.equal(r.eval_count, 64 - promptTokens + 1);
  });

  it('chat: shift applies too, and shift false stops at the full context', async () => {
    const messages = [{ role: 'user', content: 'Tell me a long story about a llama.' }];
    const chat = async (extra: Record<string, unknown>) => {
      const res = await postJson(`${t.baseUrl}/api/chat`, {
        model: 'tiny',
        stream: false,
        messages,
        options: OPTIONS,
        ...extra,
      });
      assert.equal(res.status, 200);
      return (await res.json()) as Record<string, unknown>;
    };
    const shifted = await chat({});
    assert.equal(shifted.done_reason, 'length');
    assert.equal(shifted.eval_count, 200);
    const stopped = await chat({ shift: false });
    assert.equal(stopped.done_reason, 'length');
    assert.equal(stopped.eval_count, 64 - (stopped.prompt_eval_count as number) + 1);
  });
});
