// Context.memory(): where a context's bytes live, from llama.cpp's llama_get_memory_breakdown.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { sumMemory } from '../../src/runner/runner-memory';
import { TINY_LLAMA_SPM, TINY_QWEN2, ensureTestModels } from '../utils/models';
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
    // On the CPU build everything is on the CPU device (host buffers, or its extra buffer types such as CPU_REPACK,
    // which are not host buffers for ggml); a GPU build offloads the layers to a GPU device buffer.
    for (const entry of small.memory()) {
      assert.ok(['', 'cpu', 'gpu', 'igpu', 'accel', 'meta'].includes(entry.deviceType ?? 'absent'));
    }
    const device = small.memory().filter((e) => e.deviceType === 'gpu' || e.deviceType === 'igpu');
    if (GPU_ADDON) assert.ok(device.length > 0, 'a GPU build holds some bytes in device memory');
    else assert.deepEqual(device, []);
    await small.dispose();
    assertThrowsCode(() => small.memory(), 'LLAMA_DISPOSED');
    await model.dispose();
  });

  // Issue 32: a Q4_0 model's weights are repacked for the CPU (buffer type CPU_REPACK, not a host buffer for ggml):
  // /api/ps counted them as VRAM on a machine without a GPU.
  it('a quantized model on the CPU build: repacked weights are the CPU device, and size_vram is 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'llamad-q4-'));
    try {
      const path = join(dir, 'q4.gguf');
      await binding.quantize(TINY_QWEN2, path, { type: 'Q4_0' });
      const model = await loadModel(path);
      const ctx = new binding.Context(model, { nCtx: 256, nThreads: 1 });
      const entries = ctx.memory();
      for (const e of entries.filter((x) => !x.host && !GPU_ADDON)) assert.equal(e.deviceType, 'cpu', e.buffer);
      if (!GPU_ADDON) assert.equal(sumMemory([entries]).vramBytes, 0, JSON.stringify(entries));
      await ctx.dispose();
      await model.dispose();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
