import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson, readNdjson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

// Streaming wire shapes, mid-stream errors and client aborts, over the FakeBinding (scripted tokens), so they run
// even where the addon is not built. The same properties are checked with the real addon in generate-chat.test.ts.
describe('streaming over HTTP (FakeBinding)', () => {
  let t: TestApp;
  const binding = new FakeBinding();

  before(async () => {
    t = await createTestApp({ binding });
    const path = join(t.modelsDir, 'fake.gguf');
    await writeTinyGguf(path, { chatTemplate: '{{ chatml }}' });
    const res = await postJson(`${t.baseUrl}/api/create`, { model: 'fake', modelfile: `FROM ${path}`, stream: false });
    assert.equal(res.status, 200);
  });

  beforeEach(() => {
    binding.script = () => ({ pieces: ['Hello', ',', ' world'] });
  });

  after(() => t.close());

  it('streams generate as NDJSON: deltas, then a final chunk with the metrics only there', async () => {
    const res = await postJson(`${t.baseUrl}/api/generate`, { model: 'fake', prompt: 'Hi' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
    const lines = await readNdjson(res);
    assert.equal(lines.length, 4);
    for (const line of lines.slice(0, 3)) {
      assert.deepEqual(Object.keys(line), ['model', 'created_at', 'response', 'done']);
      assert.equal(line.done, false);
      assert.match(line.created_at as string, ISO_UTC);
    }
    assert.deepEqual(
      lines.slice(0, 3).map((l) => l.response),
      ['Hello', ',', ' world'],
    );
    const last = lines[3];
    assert.equal(last.response, '');
    assert.equal(last.done, true);
    assert.equal(last.done_reason, 'stop');
    assert.ok(Array.isArray(last.context) && (last.context as number[]).length > 3);
    for (const key of [
      'total_duration',
      'load_duration',
      'prompt_eval_count',
      'prompt_eval_duration',
      'eval_count',
      'eval_duration',
    ]) {
      assert.ok(Number.isInteger(last[key]) && (last[key] as number) > 0, `${key} = ${String(last[key])}`);
    }
    assert.equal(last.eval_count, 3);
  });

  it('streams chat with message chunks and answers stream:false with one object', async () => {
    const lines = await readNdjson(
      await postJson(`${t.baseUrl}/api/chat`, { model: 'fake', messages: [{ role: 'user', content: 'Hi' }] }),
    );
    assert.deepEqual(lines[0].message, { role: 'assistant', content: 'Hello' });
    assert.deepEqual(lines.at(-1)!.message, { role: 'assistant', content: '' });
    const single = await postJson(`${t.baseUrl}/api/chat`, {
      model: 'fake',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: false,
    });
    assert.match(single.headers.get('content-type') ?? '', /^application\/json/);
    const body = (await single.json()) as Record<string, unknown>;
    assert.deepEqual(body.message, { role: 'assistant', content: 'Hello, world' });
    assert.equal(body.done, true);
    assert.equal(body.done_reason, 'stop');
    assert.equal(body.eval_count, 3);
  });

  it('answers the load and unload shortcuts with one JSON object even when streaming', async () => {
    const load = await postJson(`${t.baseUrl}/api/generate`, { model: 'fake' });
    assert.match(load.headers.get('content-type') ?? '', /^application\/json/);
    const body = (await load.json()) as Record<string, unknown>;
    assert.deepEqual(
      { ...body, created_at: '' },
      { model: 'fake', created_at: '', response: '', done: true, done_reason: 'load' },
    );
    const unload = await postJson(`${t.baseUrl}/api/chat`, { model: 'fake', messages: [], keep_alive: 0 });
    const u = (await unload.json()) as Record<string, unknown>;
    assert.equal(u.done_reason, 'unload');
    assert.deepEqual(u.message, { role: 'assistant', content: '' });
  });

  it('ends with one {"error"} line when generation fails mid-stream', async () => {
    binding.script = () => ({ pieces: ['a', 'b'], error: { code: 'LLAMA_DECODE_FAILED', message: 'kv cache full' } });
    const res = await postJson(`${t.baseUrl}/api/generate`, { model: 'fake', prompt: 'Hi' });
    assert.equal(res.status, 200);
    const lines = await readNdjson(res);
    assert.deepEqual(lines.at(-1), { error: 'an error was encountered while running the model: kv cache full' });
    assert.equal(lines.length, 3);
    assert.equal((await fetch(`${t.baseUrl}/`)).status, 200);
  });

  it('answers an error before the first token with a real status', async () => {
    binding.script = () => ({ pieces: [], error: { code: 'LLAMA_DECODE_FAILED', message: 'early' } });
    const res = await postJson(`${t.baseUrl}/api/generate`, { model: 'fake', prompt: 'Hi' });
    assert.equal(res.status, 500);
    assert.deepEqual(await res.json(), { error: 'an error was encountered while running the model: early' });
  });

  it('cancels generation when the client disconnects, freeing the only slot', async () => {
    binding.script = () => ({ pieces: Array.from({ length: 10_000 }, () => 'x'), delayMs: 1 });
    const controller = new AbortController();
    const res = await postJson(
      `${t.baseUrl}/api/generate`,
      { model: 'fake', prompt: 'long' },
      { signal: controller.signal },
    );
    const reader = res.body!.getReader();
    await reader.read();
    const cancelsBefore = binding.cancelled.length;
    controller.abort();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(binding.cancelled.length, cancelsBefore + 1);
    assert.equal(binding.activeTasks(), 0);
    binding.script = () => ({ pieces: ['ok'] });
    const next = await postJson(`${t.baseUrl}/api/generate`, { model: 'fake', prompt: 'after', stream: false });
    assert.equal(((await next.json()) as { response: string }).response, 'ok');
  });
});
