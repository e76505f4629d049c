// A unified KV cache shared by the slots (params.kvUnified, llama-server's `-np -1`): concurrency, the whole context
// for a lone task, newcomers waiting for cells, paused tasks resuming with the same output, setThreads.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { TINY_LLAMA_SPM, ensureTestModels } from '../utils/models';
import { GREEDY, binding, loadModel, runTask } from './native-helpers';

ensureTestModels();

/** A prompt of `n` tokens (BOS, then a repeated word). */
function promptOf(model: NativeModel, n: number): Int32Array {
  const word = model.tokenize(' llama', false, false)[0];
  return Int32Array.from({ length: n }, (_, i) => (i === 0 ? 1 : word));
}

describe('a context whose slots share one KV cache', () => {
  let model: NativeModel;
  let ctx: NativeContext;
  const N_CTX = 256;

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    ctx = new binding.Context(model, { nCtx: N_CTX, nParallel: 4, kvUnified: true, nThreads: 1, nThreadsMax: 2 });
  });
  after(async () => {
    await ctx.dispose();
    await model.dispose();
  });

  it('reports the shared shape: every slot may use all nCtx cells', () => {
    const stats = ctx.stats();
    assert.equal(stats.kvUnified, true);
    assert.equal(stats.nParallel, 4);
    assert.equal(stats.nCtxSlot, N_CTX);
    assert.equal(stats.kvCellsUsed, 0);
    assert.equal(stats.pausedSlots, 0);
  });

  it('runs 4 small tasks at once', async () => {
    const prompt = promptOf(model, 8);
    let maxActive = 0;
    const onToken = () => {
      maxActive = Math.max(maxActive, ctx.stats().activeSlots);
    };
    const results = await Promise.all(
      [0, 1, 2, 3].map(() => runTask(ctx, { tokens: prompt, nPredict: 24, ignoreEos: true }, onToken)),
    );
    assert.equal(maxActive, 4);
    for (const r of results) assert.equal(r.tokenEvents.length, 24);
    // Greedy and batched together: the same prompt gives the same tokens in every slot.
    for (const r of results.slice(1)) assert.deepEqual(r.tokens, results[0].tokens);
  });

  it('gives a lone task the whole context (no shift before nCtx tokens)', async () => {
    const prompt = promptOf(model, 16);
    const r = await runTask(ctx, { tokens: prompt, nPredict: -1, ignoreEos: true, contextShift: false });
    assert.equal(r.done.reason, 'length');
    // Every cell filled; the last token sampled is emitted without needing one (as with a slot of its own).
    assert.equal(prompt.length + r.tokenEvents.length, N_CTX + 1);
  });

  it('makes a newcomer that does not fit wait, then completes both untruncated', async () => {
    const long = promptOf(model, 150);
    const short = promptOf(model, 120);
    const alone = await runTask(ctx, { tokens: long, nPredict: 60, ignoreEos: true, sampling: GREEDY });
    let newcomerStartedEarly = false;
    let newcomerSubmitted = false;
    let newcomer: Promise<Awaited<ReturnType<typeof runTask>>> | undefined;
    let newcomerTokens = 0;
    const first = runTask(ctx, { tokens: long, nPredict: 60, ignoreEos: true }, () => {
      if (!newcomerSubmitted) {
        newcomerSubmitted = true;
        // 150 + 60 cells committed; 120 more do not fit 256: the newcomer must wait for the first to end.
        newcomer = runTask(ctx, { tokens: short, nPredict: 20, ignoreEos: true }, () => newcomerTokens++);
        return;
      }
      if (newcomerTokens > 0) newcomerStartedEarly = true;
      const s = ctx.stats();
      assert.ok(s.kvCellsUsed <= N_CTX);
    });
    const a = await first;
    assert.ok(newcomer);
    const b = await newcomer;
    assert.equal(newcomerStartedEarly, false, 'the newcomer waited for cells');
    assert.equal(a.done.reason, 'length');
    assert.equal(a.tokenEvents.length, 60);
    assert.deepEqual(a.tokens, alone.tokens, 'the running task was neither truncated nor shifted');
    assert.equal(b.tokenEvents.length, 20);
  });

  it('pauses the younger task when the older needs its cells, and resumes it with the same output', async () => {
    const older = promptOf(model, 40);
    const younger = promptOf(model, 100);
    // Alone, each gives the reference output.
    const refOld = await runTask(ctx, { tokens: older, nPredict: 180, ignoreEos: true });
    const refYoung = await runTask(ctx, { tokens: younger, nPredict: 100, ignoreEos: true });
    let sawPaused = false;
    const watch = () => {
      if (ctx.stats().pausedSlots > 0) sawPaused = true;
    };
    let youngTask: Promise<Awaited<ReturnType<typeof runTask>>> | undefined;
    const oldTask = runTask(ctx, { tokens: older, nPredict: 180, ignoreEos: true }, () => {
      watch();
      // Both fit at first (40 + 100 + 2 <= 256); the older grows to 220 cells and the younger to 200: one must wait.
      youngTask ??= runTask(ctx, { tokens: younger, nPredict: 100, ignoreEos: true }, watch);
    });
    const a = await oldTask;
    assert.ok(youngTask);
    const b = await youngTask;
    assert.ok(sawPaused, 'a slot waited for cells');
    assert.deepEqual(a.tokens, refOld.tokens);
    assert.deepEqual(b.tokens, refYoung.tokens);
    assert.equal(ctx.stats().pausedSlots, 0);
  });

  it('takes a new thread count for its next decodes', async () => {
    ctx.setThreads(2);
    const r = await runTask(ctx, { tokens: promptOf(model, 8), nPredict: 4, ignoreEos: true });
    assert.equal(r.tokenEvents.length, 4);
    assert.equal(ctx.stats().nThreads, 2);
    assert.throws(() => ctx.setThreads(0), /integer/);
  });
});
