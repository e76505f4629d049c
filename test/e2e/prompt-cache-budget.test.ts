import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureTestModels, TINY_LLAMA_SPM, TINY_QWEN2, TINY_QWEN2_TOOLS } from '../utils/models';
import { createModel, postJson } from '../utils/ndjson';
import { runnersOf } from '../utils/processes';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const MIB = 2 ** 20;

interface PsModel {
  name: string;
  parallel?: { ram_cache?: { entries: number; bytes: number; hits: number; tokens: number; max_bytes: number } };
}

// LLAMAD_CACHE_RAM is one budget for the whole daemon: with OLLAMA_MAX_LOADED_MODELS=2 each runner process loads
// with half of it, /api/ps shows each model's share (parallel.ram_cache.max_bytes), and the shares of the loaded
// models never add up to more than the budget — also when a third model replaces one of them.
describe('the host-RAM prompt cache budget over two loaded models', { skip: addon.skip }, () => {
  let t: TestApp;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({
      binding: addon.binding,
      config: { numParallel: 1, contextLength: 512, cacheRamMiB: 64, maxLoadedModels: 2 },
    });
    await createModel(t.baseUrl, 'qwen', `FROM ${TINY_QWEN2}\nPARAMETER temperature 0`);
    await createModel(t.baseUrl, 'llama', `FROM ${TINY_LLAMA_SPM}\nPARAMETER temperature 0`);
    await createModel(t.baseUrl, 'tools', `FROM ${TINY_QWEN2_TOOLS}\nPARAMETER temperature 0`);
  });

  after(() => t?.close());

  async function generate(model: string): Promise<void> {
    const res = await postJson(`${t.baseUrl}/api/generate`, {
      model,
      prompt: 'Hello there',
      raw: true,
      stream: false,
      options: { temperature: 0, num_predict: 4 },
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.json();
  }

  async function ps(): Promise<PsModel[]> {
    return ((await (await fetch(`${t.baseUrl}/api/ps`)).json()) as { models: PsModel[] }).models;
  }

  it('splits the budget between the two runners and reports each share in /api/ps', async () => {
    await generate('qwen');
    await generate('llama');
    const models = await ps();
    assert.deepEqual(models.map((m) => m.name).sort(), ['llama:latest', 'qwen:latest']);
    assert.equal(runnersOf(process.pid).length, 2, 'two runner processes');
    for (const m of models) {
      const cache = m.parallel?.ram_cache;
      assert.ok(cache, `${m.name}: the runner reports its host-RAM cache`);
      assert.equal(cache.max_bytes, 32 * MIB, m.name);
      assert.ok(cache.bytes <= cache.max_bytes);
    }
  });

  it('a third model evicts one and loads with the freed share: the sum stays within the budget', async () => {
    await generate('tools');
    const models = await ps();
    assert.equal(models.length, 2);
    assert.ok(models.some((m) => m.name === 'tools:latest'));
    for (const m of models) assert.equal(m.parallel?.ram_cache?.max_bytes, 32 * MIB, m.name);
  });
});
