// The CPU's flash attention with grouped query heads (vendor/patches/0003-ggml-cpu-flash-attn-gqa-groups.patch)
// against the plain attention (flash attention off): the same greedy tokens and top logprobs, for one sequence,
// a long one (ggml's split-KV path, >= 512 cells), and several slots in separate streams and in one unified stream.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeContextParams, NativeModel } from '../../binding';
import { TINY_AGREE, TINY_LLAMA_SPM, ensureTestModels } from '../utils/models';
import { binding, loadModel, runTask, type TaskResult } from './native-helpers';

/**
 * Largest logprob difference allowed between the two attentions. The plain attention rounds the scores to f16 for
 * its V product; the grouped path keeps f32: a correct kernel differs by up to 4e-3 here, one that reads the wrong
 * q head by 0.14 (measured by breaking it on purpose).
 */
const LOGPROB_TOLERANCE = 0.02;

/** Greedy decoding with the top 5 logprobs per token. */
const TASK = { nPredict: 12, ignoreEos: true, logprobs: 5 } as const;

/**
 * Asserts that `grouped` follows `plain` token for token, with top logprobs within LOGPROB_TOLERANCE. Where the two
 * pick different tokens, that step must be a near tie in `plain` (its top two within the tolerance): then rounding
 * decides, and the rest of the sequences no longer compare.
 */
function assertSameDecoding(grouped: TaskResult, plain: TaskResult, label: string): void {
  assert.equal(grouped.tokenEvents.length, plain.tokenEvents.length, label);
  for (let i = 0; i < plain.tokenEvents.length; i++) {
    const a = grouped.tokenEvents[i];
    const b = plain.tokenEvents[i];
    const topB = b.topLogprobs ?? [];
    if (a.token !== b.token) {
      assert.ok(topB.length >= 2 && topB[0].logprob - topB[1].logprob < LOGPROB_TOLERANCE, `${label}: step ${i}`);
      return;
    }
    const topA = new Map((a.topLogprobs ?? []).map((t) => [t.token, t.logprob]));
    for (const t of topB) {
      const other = topA.get(t.token);
      if (other === undefined) continue; // a near tie at rank 5
      assert.ok(Math.abs(other - t.logprob) < LOGPROB_TOLERANCE, `${label}: step ${i}, ${other} vs ${t.logprob}`);
    }
  }
}

for (const [name, path] of [
  ['tiny-agree (8 q heads over 2 K/V heads, head size 64)', TINY_AGREE],
  ['tiny-llama-spm (4 q heads over 2 K/V heads, head size 32)', TINY_LLAMA_SPM],
] as const) {
  describe(`flash attention on the CPU with grouped query heads: ${name}`, () => {
    let model: NativeModel;

    before(async () => {
      ensureTestModels();
      model = await loadModel(path, { nGpuLayers: 0 });
    });
    after(async () => {
      await model.dispose();
    });

    /** Runs `prompts` concurrently on a context with flash attention on and on one with it off. */
    async function both(
      params: Partial<NativeContextParams>,
      prompts: Int32Array[],
    ): Promise<{ on: TaskResult[]; off: TaskResult[] }> {
      const run = async (flashAttn: 'on' | 'off') => {
        const ctx = new binding.Context(model, { nCtx: 2048, nThreads: 2, ...params, flashAttn });
        assert.equal(ctx.stats().flashAttn, flashAttn);
        try {
          return await Promise.all(prompts.map((tokens) => runTask(ctx, { ...TASK, tokens })));
        } finally {
          await ctx.dispose();
        }
      };
      return { on: await run('on'), off: await run('off') };
    }

    it('one sequence, short and past 512 cells (the split-KV path), at 2 and 3 threads', async () => {
      const short = model.tokenize('Once upon a time there was a little robot who', true, false);
      const long = model.tokenize('The quick brown fox jumps over the lazy dog. '.repeat(60), true, false);
      assert.ok(long.length > 520, `${long.length} tokens`);
      for (const nThreads of [2, 3]) {
        for (const [label, prompt] of [
          ['short', short],
          ['long', long],
        ] as const) {
          const { on, off } = await both({ nThreads }, [prompt]);
          assertSameDecoding(on[0], off[0], `${label}, ${nThreads} threads`);
        }
      }
    });

    it('three slots decoding together, in separate KV streams and in one unified stream', async () => {
      const prompts = ['Hello, my name is', 'The capital of France', 'def fibonacci(n):\n'].map((t) =>
        model.tokenize(t, true, false),
      );
      for (const kvUnified of [false, true]) {
        const { on, off } = await both({ nParallel: 3, kvUnified }, prompts);
        for (let i = 0; i < prompts.length; i++) assertSameDecoding(on[i], off[i], `slot ${i}, unified ${kvUnified}`);
      }
    });
  });
}
