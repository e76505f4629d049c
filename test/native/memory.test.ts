// Context.memory(): where a context's bytes live, from llama.cpp's llama_get_memory_breakdown.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { describe, it } from 'node:test';
import { TINY_LLAMA_SPM, ensureTestModels } from '../utils/models';
import { GPU_ADDON, assertThrowsCode, binding, loadModel } from './native-helpers';

ensureTestModels();

describe('Context.memory', () => {
  it('reports the weights, the KV cache and the compute buffers per buffer type', async () => {
    const model = await loadModel(TINY_LLAMA_SPM);
    const small = new binding.Context(model, { nCtx: 256, nThreads: 2 });
    const large = new binding.Context(model, { nCtx: 1024, nThreads: 2 });
    const sum = (ctx: typeof small, key: 'model' | 'context' | 'compute') =>
      ctx.memory().reduce((n, e) => n + e[key], 0);
    for (const entry of small.memory()) {
      assert.equal(typeof entry.buffer, 'string');
      assert.ok(entry.model + entry.context + entry.compute > 0, 'only non-empty buffer types are listed');
    }
    // The weights: no more than the file, most of it (the file adds its header and metadata).
    const file = statSync(TINY_LLAMA_SPM).size;
    assert.ok(
      sum(small, 'model') <= file && sum(small, 'model') > file * 0.5,
      `model ${sum(small, 'model')} vs file ${file}`,
    );
    assert.equal(sum(large, 'model'), sum(small, 'model'), 'weights are the same for every context of a model');
    // The KV cache grows with n_ctx: four times the cells, four times the bytes (both are multiples of 256 cells).
    assert.equal(sum(large, 'context'), 4 * sum(small, 'context'));
    assert.equal(sum(small, 'context'), small.stats().kvSize, 'the estimate the context reports to V8 agrees');
    assert.ok(sum(small, 'compute') > 0);
    // On the CPU build everything is host memory; a GPU build offloads the layers to a device buffer.
    const device = small.memory().filter((e) => !e.host);
    if (GPU_ADDON) assert.ok(device.length > 0, 'a GPU build holds some bytes in device memory');
    else assert.deepEqual(device, []);
    await small.dispose();
    assertThrowsCode(() => small.memory(), 'LLAMA_DISPOSED');
    await model.dispose();
  });
});
