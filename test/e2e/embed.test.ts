import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { ensureTestModels, TINY_BERT, TINY_NOMIC_BERT, TINY_QWEN2 } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const embedSkip =
  addon.skip ??
  (typeof addon.binding?.Context.prototype.embed !== 'function'
    ? 'native addon is built without Context.embed (binding.d.ts embeddings) yet'
    : undefined);

const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

// /api/embed and /api/embeddings end to end with the REAL addon: tiny-bert and tiny-nomic-bert (embedding models,
// 128-dim, mean pooling) and tiny-qwen2 (a generation model, which gets a separate embedding context), through the
// official `ollama` client and raw HTTP.
describe('embeddings with the real addon (§3.4, §3.5)', { skip: embedSkip }, () => {
  let t: TestApp;
  let ollama: Ollama;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 2, contextLength: 512 } });
    ollama = new Ollama({ host: t.baseUrl });
    for (const [model, path] of [
      ['bert', TINY_BERT],
      ['nomic', TINY_NOMIC_BERT],
      ['qwen', TINY_QWEN2],
    ]) {
      const res = await postJson(`${t.baseUrl}/api/create`, { model, modelfile: `FROM ${path}`, stream: false });
      assert.equal(res.status, 200, model);
    }
  });

  after(() => t?.close());

  for (const model of ['bert', 'nomic']) {
    it(`${model}: one unit vector per input, in order, 128 dims, with metrics`, async () => {
      const inputs = ['The sky is blue.', 'Grass is green.', 'The sky is blue.'];
      const res = await ollama.embed({ model, input: inputs });
      assert.equal(res.embeddings.length, 3);
      for (const v of res.embeddings) {
        assert.equal(v.length, 128);
        assert.ok(Math.abs(norm(v) - 1) < 1e-4, `norm ${norm(v)}`);
      }
      const close = (a: number[], b: number[]) => a.every((x, i) => Math.abs(x - b[i]) < 1e-4);
      assert.ok(close(res.embeddings[0], res.embeddings[2]), 'same text, same vector (batching keeps order)');
      assert.ok(!close(res.embeddings[0], res.embeddings[1]));
      assert.ok(res.prompt_eval_count > 6);
      assert.ok(res.total_duration > 0);
      const single = await ollama.embed({ model, input: 'Grass is green.' });
      for (let i = 0; i < 128; i++) assert.ok(Math.abs(single.embeddings[0][i] - res.embeddings[1][i]) < 1e-4);
    });
  }

  it('dimensions cuts and re-normalizes', async () => {
    const res = await ollama.embed({ model: 'bert', input: 'hello world', dimensions: 16 });
    assert.equal(res.embeddings[0].length, 16);
    assert.ok(Math.abs(norm(res.embeddings[0]) - 1) < 1e-4);
  });

  it('a generation model embeds too (separate embedding context)', async () => {
    const res = await ollama.embed({ model: 'qwen', input: ['a b c', 'd e f'] });
    assert.equal(res.embeddings.length, 2);
    for (const v of res.embeddings) assert.ok(Math.abs(norm(v) - 1) < 1e-4);
  });

  it('truncates long input by default; truncate:false is a 400', async () => {
    const long = 'word '.repeat(2000);
    const ok = await ollama.embed({ model: 'bert', input: long });
    assert.equal(ok.embeddings[0].length, 128);
    assert.ok(ok.prompt_eval_count <= 512);
    const res = await postJson(`${t.baseUrl}/api/embed`, { model: 'bert', input: long, truncate: false });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: 'the input length exceeds the context length' });
  });

  it('empty input loads the model and returns no vectors; bad input types are 400', async () => {
    const empty = await postJson(`${t.baseUrl}/api/embed`, { model: 'bert', input: [] });
    assert.equal(empty.status, 200);
    assert.deepEqual(((await empty.json()) as { embeddings: unknown }).embeddings, []);
    const bad = await postJson(`${t.baseUrl}/api/embed`, { model: 'bert', input: [1, 2] });
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), { error: 'invalid input type' });
    const missing = await postJson(`${t.baseUrl}/api/embed`, { model: 'nope', input: 'x' });
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { error: 'model "nope" not found, try pulling it first' });
  });

  it('legacy /api/embeddings: {embedding}, empty prompt → []', async () => {
    const res = await ollama.embeddings({ model: 'nomic', prompt: 'hello' });
    assert.equal(res.embedding.length, 128);
    assert.ok(Math.abs(norm(res.embedding) - 1) < 1e-4);
    const empty = await postJson(`${t.baseUrl}/api/embeddings`, { model: 'nomic', prompt: '' });
    assert.deepEqual(await empty.json(), { embedding: [] });
    const noModel = await postJson(`${t.baseUrl}/api/embeddings`, { prompt: 'x' });
    assert.equal(noModel.status, 400);
    assert.deepEqual(await noModel.json(), { error: 'model is required' });
  });
});
