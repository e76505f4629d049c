import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { postJson, readNdjson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const METRICS = [
  'total_duration',
  'load_duration',
  'prompt_eval_count',
  'prompt_eval_duration',
  'eval_count',
  'eval_duration',
];
/** Greedy and short: random weights give gibberish, but deterministic gibberish. */
const GREEDY = { temperature: 0, seed: 42, num_predict: 12 };

// Generate and chat end to end with the REAL addon and tiny-qwen2 (ChatML template, random weights), driven by the
// official `ollama` client and raw HTTP. Skips (with the reason) when the addon is not built.
describe('generate and chat with the real addon', { skip: addon.skip }, () => {
  let t: TestApp;
  let ollama: Ollama;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 512 } });
    ollama = new Ollama({ host: t.baseUrl });
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: 'tiny',
      modelfile: `FROM ${TINY_QWEN2}\nSYSTEM You are terse.\nPARAMETER temperature 0`,
      stream: false,
    });
    assert.equal(res.status, 200);
  });

  after(() => t?.close());

  it('generate: stream and non-stream give the same greedy text; the final chunk carries the metrics', async () => {
    const res = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'tiny',
      prompt: 'Why is the sky blue?',
      options: GREEDY,
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
    const lines = await readNdjson(res);
    const last = lines.at(-1)!;
    assert.equal(last.done, true);
    assert.equal(last.done_reason, 'length');
    assert.equal(last.response, '');
    for (const key of METRICS) assert.ok(Number.isInteger(last[key]) && (last[key] as number) > 0, key);
    assert.equal(last.eval_count, 12);
    assert.ok(Array.isArray(last.context));
    for (const line of lines.slice(0, -1)) {
      assert.equal(line.done, false);
      for (const key of METRICS) assert.equal(line[key], undefined);
    }
    const streamed = lines.map((l) => l.response).join('');
    assert.ok(streamed.length > 0);

    // Another num_ctx is another load: the non-stream request starts from an empty cache, as the stream did. On the
    // loaded runner it would reuse the cached prompt and evaluate its last token again alone, whose K/V rounds to f16
    // a little differently (~1e-3 in the logprobs, with flash attention on or off), and this random model has near
    // ties for greedy decoding to flip.
    const single = await ollama.generate({
      model: 'tiny',
      prompt: 'Why is the sky blue?',
      options: { ...GREEDY, num_ctx: 3072 },
    });
    assert.equal(single.response, streamed);
    assert.equal(single.done_reason, 'length');
    assert.equal(single.eval_count, 12);
  });

  it('generate through the client stream', async () => {
    const stream = await ollama.generate({ model: 'tiny', prompt: 'Hello', options: GREEDY, stream: true });
    let text = '';
    let final: { done_reason?: string; prompt_eval_count?: number } | undefined;
    for await (const part of stream) {
      text += part.response;
      if (part.done) final = part;
    }
    assert.ok(text.length > 0);
    assert.equal(final?.done_reason, 'length');
    assert.ok((final?.prompt_eval_count ?? 0) > 0);
  });

  it('raw generate returns no context', async () => {
    const res = await ollama.generate({
      model: 'tiny',
      prompt: '<|im_start|>user\nhi<|im_end|>\n',
      raw: true,
      options: GREEDY,
    });
    assert.equal(res.context, undefined);
    assert.ok((res.response ?? '').length > 0);
  });

  it('chat: stream and non-stream give the same greedy text', async () => {
    const messages = [{ role: 'user', content: 'Name a colour.' }];
    const stream = await ollama.chat({ model: 'tiny', messages, options: GREEDY, stream: true });
    let streamed = '';
    let last: { done: boolean; message: { role: string }; eval_count?: number } | undefined;
    for await (const part of stream) {
      streamed += part.message.content;
      assert.equal(part.message.role, 'assistant');
      last = part;
    }
    assert.equal(last?.done, true);
    assert.equal(last?.eval_count, 12);
    const single = await ollama.chat({ model: 'tiny', messages, options: GREEDY });
    assert.equal(single.message.content, streamed);
    assert.equal(single.done, true);
  });

  it('an end-of-generation stop is done_reason "stop"', async () => {
    // With num_predict large enough, a stop string that is the whole output's first character ends at once.
    const probe = await ollama.generate({ model: 'tiny', prompt: 'x', options: GREEDY });
    const first = [...(probe.response ?? '')][0];
    const res = await ollama.generate({ model: 'tiny', prompt: 'x', options: { ...GREEDY, stop: [first] } });
    assert.equal(res.done_reason, 'stop');
    assert.ok(!(res.response ?? '').includes(first));
  });

  it('load and unload shortcuts', async () => {
    const load = await ollama.generate({ model: 'tiny', prompt: '' });
    assert.equal(load.done_reason, 'load');
    const unload = await ollama.chat({ model: 'tiny', messages: [], keep_alive: 0 });
    assert.equal(unload.done_reason, 'unload');
  });

  it('a prompt longer than the context is truncated, not an error', async () => {
    const res = await ollama.generate({
      model: 'tiny',
      prompt: 'lorem ipsum '.repeat(400),
      options: { ...GREEDY, num_ctx: 256, num_predict: 4 },
    });
    assert.equal(res.done, true);
    assert.equal(res.eval_count, 4);
  });

  it('a client abort frees the single slot for the next request', async () => {
    const controller = new AbortController();
    const res = await postJson(
      `${t.baseUrl}/api/generate`,
      { model: 'tiny', prompt: 'Tell me a long story.', options: { temperature: 0, num_predict: 1500 } },
      { signal: controller.signal },
    );
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
    controller.abort();
    const started = Date.now();
    const next = await ollama.generate({ model: 'tiny', prompt: 'Next', options: { ...GREEDY, num_predict: 4 } });
    assert.equal(next.eval_count, 4);
    // 1500 tokens take many seconds here; finishing quickly proves the aborted task was cancelled.
    assert.ok(Date.now() - started < 8000, `next request took ${Date.now() - started} ms`);
  });

  it('unknown model and bad requests still answer with Ollama errors', async () => {
    await assert.rejects(ollama.generate({ model: 'ghost', prompt: 'x' }), (e: unknown) => {
      assert.equal((e as { status_code: number }).status_code, 404);
      return true;
    });
    const res = await postJson(`${t.baseUrl}/api/chat`, {
      model: 'tiny',
      messages: [{ role: 'user', content: 'x' }],
      think: true,
    });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: '"tiny" does not support thinking' });
  });

  it('logprobs: one entry per generated token with top alternatives, concatenated when not streaming', async () => {
    const res = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'tiny',
      prompt: 'Count:',
      stream: false,
      logprobs: true,
      top_logprobs: 3,
      options: { ...GREEDY, num_predict: 5 },
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as {
      eval_count: number;
      logprobs: { token: string; logprob: number; bytes: number[]; top_logprobs: { logprob: number }[] }[];
    };
    assert.equal(body.logprobs.length, body.eval_count);
    for (const lp of body.logprobs) {
      assert.ok(lp.logprob <= 0 && Number.isFinite(lp.logprob));
      assert.ok(Array.isArray(lp.bytes));
      assert.equal(lp.top_logprobs.length, 3);
      assert.ok(lp.top_logprobs[0].logprob >= lp.top_logprobs[2].logprob, 'most likely first');
      assert.ok(lp.top_logprobs[0].logprob >= lp.logprob - 1e-6, 'greedy picks the most likely token');
    }
  });

  it('truncate:false turns an over-long prompt into Ollama’s 400', async () => {
    const res = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'tiny',
      prompt: 'word '.repeat(2000),
      truncate: false,
      stream: false,
    });
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { error: string }).error, /^the prompt is longer than the context length/);
  });
});
