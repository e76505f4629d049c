import assert from 'node:assert/strict';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { ensureTestModels, TINY_LLAMA_SPM } from '../utils/models';
import { postJson, readNdjson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

// Create with quantize through binding.quantize (the real addon) and layer sharing between variants (§3.9).
describe('create with quantize (real addon)', { skip: addon.skip }, () => {
  let t: TestApp;
  let ollama: Ollama;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding });
    ollama = new Ollama({ host: t.baseUrl });
    const res = await postJson(`${t.baseUrl}/api/create`, { model: 'base-f16', modelfile: `FROM ${TINY_LLAMA_SPM}` });
    assert.equal(res.status, 200);
    await readNdjson(res);
  });

  after(() => t.close());

  for (const type of ['Q8_0', 'Q4_0'] as const) {
    it(`quantizes tiny-llama-spm to ${type} (JSON form through the client) and the result generates`, async () => {
      const model = `tiny-${type.toLowerCase()}`;
      const stream = await ollama.create({ model, from: 'base-f16', quantize: type.toLowerCase(), stream: true });
      const statuses: string[] = [];
      const progress: { digest: string; total: number; completed: number }[] = [];
      for await (const p of stream) {
        // Consecutive progress records share one status: list it once.
        if (statuses[statuses.length - 1] !== p.status) statuses.push(p.status);
        if (p.status === `quantizing F16 model to ${type}`) progress.push(p);
      }
      // Ollama's quantization progress: placeholder digest, total = source bytes, completed 0 … total, non-decreasing.
      const size = (await stat(TINY_LLAMA_SPM)).size;
      assert.ok(progress.length >= 2, `${progress.length} progress records`);
      for (const p of progress) {
        assert.equal(p.digest, '0000000000000000000');
        assert.equal(p.total, size);
        assert.ok(p.completed >= 0 && p.completed <= p.total, JSON.stringify(p));
      }
      assert.equal(progress[0].completed, 0);
      assert.equal(progress[progress.length - 1].completed, size);
      for (let i = 1; i < progress.length; i++) assert.ok(progress[i].completed >= progress[i - 1].completed);
      assert.deepEqual(statuses, [
        'parsing modelfile',
        'looking for base model base-f16',
        'copying layers',
        `quantizing F16 model to ${type}`,
        'verifying conversion',
        'setting system instructions',
        'success',
      ]);
      const show = await ollama.show({ model });
      assert.equal(show.details.quantization_level, type);
      const out = await ollama.generate({ model, prompt: 'Hello', options: { temperature: 0, num_predict: 4 } });
      assert.equal(out.done, true);
      assert.ok(out.eval_count > 0);
    });
  }

  it('quantizes with the spec’s Modelfile form (fixed records) and rejects non-F16 sources', async () => {
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: 'mf-q8',
      modelfile: `FROM ${TINY_LLAMA_SPM}\nSYSTEM quantized`,
      quantize: 'Q8_0',
    });
    assert.deepEqual(
      (await readNdjson(res)).map((r) => r.status),
      [
        'parsing modelfile',
        `looking for base model ${TINY_LLAMA_SPM}`,
        'copying layers',
        'setting system instructions',
        'success',
      ],
    );
    assert.equal((await ollama.show({ model: 'mf-q8' })).details.quantization_level, 'Q8_0');
    const again = await postJson(`${t.baseUrl}/api/create`, { model: 'x', from: 'mf-q8', quantize: 'q4_0' });
    assert.equal(again.status, 400);
    assert.deepEqual(await again.json(), { error: 'quantization is only supported for F16, BF16 and F32 models' });
    const unknown = await postJson(`${t.baseUrl}/api/create`, { model: 'x', from: 'base-f16', quantize: 'q9' });
    assert.equal(unknown.status, 400);
    assert.match(((await unknown.json()) as { error: string }).error, /^unsupported quantization type q9 - supported/);
    assert.deepEqual(
      (await readdir(join(t.modelsDir, 'blobs'))).filter((f) => !/^sha256-[0-9a-f]{64}$/.test(f)),
      [],
    );
  });

  it('ten variants of one base store its weights once', async () => {
    const blobs = join(t.modelsDir, 'blobs');
    const weights = (await stat(TINY_LLAMA_SPM)).size;
    const sizes = async () => Promise.all((await readdir(blobs)).map(async (f) => (await stat(join(blobs, f))).size));
    const before = await sizes();
    for (let i = 0; i < 10; i++) {
      const r = await ollama.create({ model: `variant-${i}`, from: 'base-f16', system: `You are variant ${i}.` });
      assert.equal(r.status, 'success');
    }
    const after = await sizes();
    assert.equal(after.filter((s) => s === weights).length, 1);
    const added = after.reduce((a, b) => a + b, 0) - before.reduce((a, b) => a + b, 0);
    // Ten system layers and ten configs: a few KB, nothing near another copy of the weights.
    assert.ok(added < 64 * 1024, `ten variants added ${added} bytes`);
    assert.ok(after.length - before.length <= 20);
  });
});
