// Context lifecycle: dispose semantics, tasks in flight at dispose, the process exiting on its own, the logger.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import type { NativeContextParams } from '../../binding';
import { findAddonPath } from '../../src/native/load-binding';
import { TINY_LLAMA_MHA, TINY_LLAMA_SPM, ensureTestModels } from '../utils/models';
import { GREEDY, assertThrowsCode, binding, loadModel, runTask } from './native-helpers';

ensureTestModels();

describe('Context.dispose', () => {
  it('is idempotent; every method afterwards throws LLAMA_DISPOSED', async () => {
    const model = await loadModel(TINY_LLAMA_SPM);
    const ctx = new binding.Context(model, { nCtx: 256, nThreads: 2 });
    const prompt = model.tokenize('Hello', true, false);
    await runTask(ctx, { tokens: prompt, nPredict: 2 });
    await Promise.all([ctx.dispose(), ctx.dispose()]);
    await ctx.dispose();
    assertThrowsCode(
      () => ctx.submit({ tokens: prompt, nPredict: 2, sampling: GREEDY }, () => undefined),
      'LLAMA_DISPOSED',
    );
    assertThrowsCode(() => ctx.stats(), 'LLAMA_DISPOSED');
    assertThrowsCode(() => ctx.cancel(1), 'LLAMA_DISPOSED');
    // The model stays usable and can host a new context.
    const ctx2 = new binding.Context(model, { nCtx: 256, nThreads: 2 });
    assert.equal((await runTask(ctx2, { tokens: prompt, nPredict: 3, ignoreEos: true })).tokens.length, 3);
    await model.dispose();
    assertThrowsCode(() => ctx2.stats(), 'LLAMA_DISPOSED');
  });

  it('ends tasks in flight with reason cancelled before dispose() resolves', async () => {
    const model = await loadModel(TINY_LLAMA_SPM);
    const ctx = new binding.Context(model, { nCtx: 512, nParallel: 2, nThreads: 2 });
    const prompt = model.tokenize('Tell me a story', true, false);
    const running = runTask(ctx, { tokens: prompt, nPredict: -1, ignoreEos: true });
    const queued = [1, 2].map(() => runTask(ctx, { tokens: prompt, nPredict: -1, ignoreEos: true }));
    let settled = 0;
    void Promise.all([running, ...queued]).then(() => settled++);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await ctx.dispose();
    await Promise.resolve();
    assert.equal(settled, 1, 'all final events were delivered before dispose() resolved');
    for (const r of await Promise.all([running, ...queued])) assert.equal(r.done.reason, 'cancelled');
    await model.dispose();
  });

  it('keeps each slot to nCtx / nParallel tokens even when llama.cpp allocates more', async () => {
    const model = await loadModel(TINY_LLAMA_SPM);
    const ctx = new binding.Context(model, { nCtx: 300, nParallel: 2, nThreads: 2 });
    const stats = ctx.stats();
    assert.equal(stats.nCtxSlot, 150);
    assert.ok(stats.nCtx >= 300, 'KV cells actually allocated');
    assertThrowsCode(
      () => ctx.submit({ tokens: new Int32Array(151).fill(450), nPredict: 1, sampling: GREEDY }, () => undefined),
      'LLAMA_EXCEED_CONTEXT',
    );
    const r = await runTask(ctx, { tokens: new Int32Array(148).fill(450), nPredict: -1, ignoreEos: true });
    assert.equal(r.done.reason, 'length');
    assert.equal(r.tokens.length, 3);
    assertThrowsCode(() => new binding.Context(model, { nCtx: 1, nParallel: 2 }), 'LLAMA_INVALID_ARGUMENT');
    await model.dispose();
  });

  it('rejects bad context parameters', async () => {
    const model = await loadModel(TINY_LLAMA_SPM);
    assertThrowsCode(() => new binding.Context(model, {} as never), 'LLAMA_INVALID_ARGUMENT');
    assertThrowsCode(
      () => new binding.Context(model, { nCtx: 256, flashAttn: 'maybe' as never }),
      'LLAMA_INVALID_ARGUMENT',
    );
    assertThrowsCode(() => new binding.Context(model, { nCtx: 256, typeK: 'q9_9' }), 'LLAMA_INVALID_ARGUMENT');
    // head_dim 32: a q8_0 KV cache works (V quantized needs flash attention, which 'auto' enables on CPU).
    const ctx = new binding.Context(model, { nCtx: 256, typeK: 'q8_0', typeV: 'q8_0', flashAttn: 'on', nThreads: 2 });
    const r = await runTask(ctx, { tokens: model.tokenize('Hi', true, false), nPredict: 3, ignoreEos: true });
    assert.equal(r.tokens.length, 3);
    await model.dispose();
  });

  it("resolves flash attention 'auto' on the CPU: on for grouped-query attention, off for multi-head, the rest as asked or to llama.cpp", async () => {
    const mha = await loadModel(TINY_LLAMA_MHA, { nGpuLayers: 0 });
    const mhaAuto = new binding.Context(mha, { nCtx: 256, nThreads: 2 });
    assert.equal(mhaAuto.stats().flashAttn, 'off', 'one K/V head per q head: the plain attention is faster');
    const m = await runTask(mhaAuto, { tokens: mha.tokenize('Hi', true, false), nPredict: 3, ignoreEos: true });
    assert.equal(m.tokens.length, 3);
    await mha.dispose();
    const model = await loadModel(TINY_LLAMA_SPM, { nGpuLayers: 0 });
    const flashOf = (params: Partial<NativeContextParams>) => {
      const ctx = new binding.Context(model, { nCtx: 256, nThreads: 2, ...params });
      return { ctx, flash: ctx.stats().flashAttn };
    };
    const auto = flashOf({});
    assert.equal(auto.flash, 'on', '2 q heads per K/V head: ggml-cpu groups them (vendor patch 0003)');
    const r = await runTask(auto.ctx, { tokens: model.tokenize('Hi', true, false), nPredict: 3, ignoreEos: true });
    assert.equal(r.tokens.length, 3);
    assert.equal(flashOf({ flashAttn: 'auto', nParallel: 2, kvUnified: true }).flash, 'on');
    assert.equal(flashOf({ flashAttn: 'on' }).flash, 'on');
    assert.equal(flashOf({ flashAttn: 'off' }).flash, 'off');
    // A quantized V cache needs flash attention, and an embedding context evaluates whole inputs: llama.cpp decides.
    assert.equal(flashOf({ typeK: 'q8_0', typeV: 'q8_0' }).flash, 'auto');
    assert.equal(flashOf({ embeddings: true }).flash, 'auto');
    await model.dispose();
  });
});

describe('process lifetime', () => {
  const addon = findAddonPath();

  function runChild(source: string): { status: number | null; stdout: string; stderr: string; ms: number } {
    const started = Date.now();
    const r = spawnSync(process.execPath, ['-e', source], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, ADDON: addon ?? '', MODEL: TINY_LLAMA_SPM },
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr, ms: Date.now() - started };
  }

  it('an idle context does not keep the process alive, even without dispose()', () => {
    const r = runChild(`
      const b = require(process.env.ADDON);
      const S = { temperature: 0, topK: 0, topP: 1, minP: 0, typicalP: 1, repeatPenalty: 1, repeatLastN: 64,
                  presencePenalty: 0, frequencyPenalty: 0, seed: -1 };
      (async () => {
        const m = new b.Model(process.env.MODEL);
        await m.load();
        const ctx = new b.Context(m, { nCtx: 256, nThreads: 2 });
        const n = await new Promise((resolve) => {
          let count = 0;
          ctx.submit({ tokens: m.tokenize('Hi', true, false), nPredict: 4, sampling: S, ignoreEos: true }, (e) => {
            if (e.type === 'token') count++; else resolve(count);
          });
        });
        console.log('tokens', n);
      })();
    `);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /tokens 4/);
  });

  it('a task in flight keeps the process alive until done; exit during generation is clean', () => {
    // process.exit() skips the environment cleanup hooks: the addon must still stop its decode threads before the
    // C++ runtime tears down (a crash shows as a signal status). Repeated because the timing varies.
    for (let run = 0; run < 4; run++) {
      const r = runChild(`
      const b = require(process.env.ADDON);
      const S = { temperature: 0, topK: 0, topP: 1, minP: 0, typicalP: 1, repeatPenalty: 1, repeatLastN: 64,
                  presencePenalty: 0, frequencyPenalty: 0, seed: -1 };
      const m = new b.Model(process.env.MODEL);
      m.load().then(() => {
        const ctx = new b.Context(m, { nCtx: 256, nThreads: 2 });
        let count = 0;
        // No timer or promise keeps the loop alive here: only the in-flight task does.
        ctx.submit({ tokens: m.tokenize('Hi', true, false), nPredict: 20, sampling: S, ignoreEos: true }, (e) => {
          if (e.type === 'token') count++; else console.log('done', e.reason, count);
        });
        // A second context left generating forever when the process exits.
        const busy = new b.Context(m, { nCtx: 256, nThreads: 1 });
        busy.submit({ tokens: m.tokenize('Go', true, false), nPredict: -1, sampling: S, ignoreEos: true }, (e) => {
          if (e.type === 'token' && count >= 20) process.exit(0);
        });
      });
    `);
      assert.equal(r.status, 0, `run ${run}: status ${String(r.status)} ${r.stderr}`);
      assert.match(r.stdout, /done length 20/);
      assert.equal(r.stderr, '', 'no error output');
    }
  });
});

describe('setLogger', () => {
  it('routes llama.cpp log lines to the callback and null restores silence', async () => {
    const lines: [number, string][] = [];
    binding.setLogger((level, text) => lines.push([level, text]));
    try {
      const model = await loadModel(TINY_LLAMA_SPM);
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.ok(lines.length > 0, 'log lines arrived');
      assert.ok(lines.every(([level, text]) => Number.isInteger(level) && typeof text === 'string'));
      assert.ok(lines.some(([, text]) => /llama|load/.test(text)));
      await model.dispose();
    } finally {
      binding.setLogger(null);
    }
    const before = lines.length;
    const model = await loadModel(TINY_LLAMA_SPM);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(lines.length, before);
    await model.dispose();
    assertThrowsCode(() => binding.setLogger(42 as never), 'LLAMA_INVALID_ARGUMENT');
  });
});
