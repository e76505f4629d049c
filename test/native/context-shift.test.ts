// Context shift (NativeTaskParams.contextShift / nKeep; Ollama reference §4.4, llama-server --context-shift): a full
// slot drops half of its tokens after the first nKeep (+BOS) and generation goes on.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { TINY_LLAMA_SPM, TINY_MMPROJ, ensureTestModels } from '../utils/models';
import { testPng } from '../utils/png';
import { GPU_ADDON, GREEDY, assertThrowsCode, binding, loadModel, runTask } from './native-helpers';

ensureTestModels();

/** Tokens per slot of the contexts below. */
const SLOT = 64;

describe('context shift', () => {
  let model: NativeModel;
  let ctx: NativeContext; // one slot of SLOT tokens
  let pair: NativeContext; // two slots of SLOT tokens
  let prompt: Int32Array;

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    ctx = new binding.Context(model, { nCtx: SLOT, nParallel: 1, nThreads: 2 });
    pair = new binding.Context(model, { nCtx: 2 * SLOT, nParallel: 2, nThreads: 2 });
    prompt = model.tokenize('Once upon a time there was a little llama', true, false);
  });
  after(async () => {
    await ctx?.dispose();
    await pair?.dispose();
    await model?.dispose();
  });

  it('the slots hold 64 tokens and the prompt starts with BOS', () => {
    assert.equal(ctx.stats().nCtxSlot, SLOT);
    assert.equal(pair.stats().nCtxSlot, SLOT);
    assert.equal(prompt[0], model.info().bos);
    assert.ok(prompt.length > 6 && prompt.length < 20, `${prompt.length} prompt tokens`);
  });

  it('with contextShift, nPredict 200 on a 64-token slot gives 200 tokens and reason length', async () => {
    const r = await runTask(ctx, { tokens: prompt, nPredict: 200, ignoreEos: true, contextShift: true });
    assert.equal(r.done.reason, 'length');
    assert.equal(r.tokenEvents.length, 200);
    assert.equal(r.done.timings.predictedN, 200);
    assert.equal(r.done.timings.promptTotal, prompt.length);
    assert.ok(r.done.timings.predictedNs > 0);
  });

  it('without contextShift (the default, or false) generation stops at the full slot with reason length', async () => {
    for (const contextShift of [undefined, false]) {
      const r = await runTask(ctx, {
        tokens: prompt,
        nPredict: 200,
        ignoreEos: true,
        ...(contextShift === undefined ? {} : { contextShift }),
      });
      assert.equal(r.done.reason, 'length');
      // Every sampled token but the last is decoded: prompt + (n - 1) = SLOT.
      assert.equal(r.tokenEvents.length, SLOT - prompt.length + 1);
      assert.equal(r.done.timings.predictedN, SLOT - prompt.length + 1);
    }
  });

  it('the first tokens up to the shift equal those of a run without shift', async () => {
    const plain = await runTask(ctx, { tokens: prompt, nPredict: 200, ignoreEos: true, contextShift: false });
    const shifted = await runTask(ctx, { tokens: prompt, nPredict: 200, ignoreEos: true, contextShift: true });
    assert.deepEqual(shifted.tokens.slice(0, plain.tokens.length), plain.tokens);
  });

  it('unlimited nPredict with contextShift stops at 10 × the slot context', async () => {
    const r = await runTask(ctx, { tokens: prompt, nPredict: -1, ignoreEos: true, contextShift: true });
    assert.equal(r.done.reason, 'length');
    assert.equal(r.tokenEvents.length, 10 * SLOT);
  });

  it('two slots shifting concurrently both produce their count', async () => {
    const other = model.tokenize('The quick brown fox jumps over', true, false);
    const task = { nPredict: 200, ignoreEos: true, contextShift: true } as const;
    const soloA = await runTask(pair, { tokens: prompt, ...task });
    const soloB = await runTask(pair, { tokens: other, ...task });
    const [a, b] = await Promise.all([
      runTask(pair, { tokens: prompt, ...task }),
      runTask(pair, { tokens: other, nPredict: 150, ignoreEos: true, contextShift: true }),
    ]);
    assert.equal(a.done.reason, 'length');
    assert.equal(b.done.reason, 'length');
    assert.equal(a.tokens.length, 200);
    assert.equal(b.tokens.length, 150);
    if (!GPU_ADDON) {
      // CPU kernels give the same logits in a batch of two sequences as alone (generation.test.ts checks this too).
      assert.deepEqual(a.tokens, soloA.tokens);
      assert.deepEqual(b.tokens, soloB.tokens.slice(0, 150));
    }
  });

  it('after a shift the slot cache mirrors the KV cache: the next prompt reuses only the kept prefix', async () => {
    const fresh = new binding.Context(model, { nCtx: SLOT, nParallel: 1, nThreads: 2 });
    try {
      const expected = await runTask(fresh, { tokens: prompt, nPredict: 16, ignoreEos: true });
      for (const nKeep of [4, 2]) {
        await runTask(ctx, { tokens: prompt, nPredict: 120, ignoreEos: true, contextShift: true, nKeep });
        // The same prompt again: only BOS + nKeep positions still hold prompt tokens; the rest is evaluated anew.
        const again = await runTask(ctx, { tokens: prompt, nPredict: 16, ignoreEos: true });
        assert.equal(again.done.timings.promptN, prompt.length - (nKeep + 1), `nKeep ${nKeep}`);
        assert.equal(again.done.timings.promptTotal, prompt.length);
        assert.deepEqual(again.tokens, expected.tokens);
      }
      // nKeep -1 keeps the whole prompt: all of it is reused but its last token, evaluated for the logits.
      await runTask(ctx, { tokens: prompt, nPredict: 120, ignoreEos: true, contextShift: true, nKeep: -1 });
      const whole = await runTask(ctx, { tokens: prompt, nPredict: 16, ignoreEos: true });
      assert.equal(whole.done.timings.promptN, 1);
      assert.deepEqual(whole.tokens, expected.tokens);
      // A different prompt on the same slot still works and equals a fresh context's answer.
      const other = model.tokenize('A new story begins in the mountains far away', true, false);
      const want = await runTask(fresh, { tokens: other, nPredict: 16, ignoreEos: true });
      const got = await runTask(ctx, { tokens: other, nPredict: 16, ignoreEos: true });
      assert.deepEqual(got.tokens, want.tokens);
    } finally {
      await fresh.dispose();
    }
  });

  it('a prompt that fills the slot shifts before its first decode', async () => {
    const full = new Int32Array(SLOT).fill(450);
    full[0] = 1;
    const r = await runTask(ctx, { tokens: full, nPredict: 40, ignoreEos: true, contextShift: true });
    assert.equal(r.done.reason, 'length');
    assert.equal(r.tokens.length, 40);
  });

  it('nKeep must be an integer >= -1', () => {
    for (const nKeep of [-2, 1.5, 'x']) {
      assertThrowsCode(
        () =>
          ctx.submit(
            { tokens: prompt, nPredict: 1, sampling: GREEDY, contextShift: true, nKeep } as never,
            () => undefined,
          ),
        'LLAMA_INVALID_ARGUMENT',
      );
    }
  });

  it('a media task does not shift: it ends with length at the full slot', async () => {
    const vision = new binding.Context(model, { nCtx: SLOT, nThreads: 2, projectorPath: TINY_MMPROJ });
    try {
      const r = await runTask(vision, {
        tokens: new Int32Array(0),
        prompt: '<__media__>\ndescribe the picture:',
        images: [new Uint8Array(testPng())],
        nPredict: 200,
        ignoreEos: true,
        contextShift: true,
      });
      assert.equal(r.done.reason, 'length');
      assert.ok(r.tokens.length < SLOT, `${r.tokens.length} tokens`);
      assert.equal(r.tokens.length, SLOT - r.done.timings.promptTotal + 1);
    } finally {
      await vision.dispose();
    }
  });
});
