// Speculative decoding's cost model and draft sizing (native/spec_cost.h, spec_ngram.h): n-gram drafts reach as far
// as the earlier occurrence goes, a draft that does not pay stops (probing again rarely), and a draft model's
// catch-up of a long prompt is spread over steps in which the other slots go on decoding. Greedy output is always
// the output without drafts (the oracle).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { TINY_LLAMA_SPM, ensureTestModels } from '../utils/models';
import { GREEDY, binding, loadModel, runTask } from './native-helpers';

ensureTestModels();

/** A grammar that allows exactly `tokens`, in order (llama.cpp's `<[id]>` token syntax). */
function tokenGrammar(tokens: number[]): string {
  return `root ::= ${tokens.map((t) => `<[${t}]>`).join(' ')}`;
}

describe('speculative decoding: draft sizing and the cost model', () => {
  let model: NativeModel;
  let ctx: NativeContext;

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    ctx = new binding.Context(model, { nCtx: 1024, nParallel: 1, nThreads: 2 });
  });
  after(async () => {
    await ctx.dispose();
    await model.dispose();
  });

  it('n-gram drafts reach as far as the earlier occurrence: long drafts, accepted, on a copy', async () => {
    const text = Array.from(
      model.tokenize(
        ' The committee met on Tuesday to review the budget for the new library, and asked the architect to present' +
          ' revised drawings at the next meeting together with a schedule for the works.',
        false,
        false,
      ),
    );
    // The prompt holds the text; a token grammar makes the output copy it (what a model that copies would write).
    const tokens = Int32Array.from([1, ...text, ...model.tokenize('\n', false, false)]);
    const task = { tokens, nPredict: text.length, sampling: { ...GREEDY, grammar: tokenGrammar(text) } };
    const base = await runTask(ctx, task);
    assert.deepEqual(base.tokens, text);
    for (const fixed of [true, false]) {
      const before = ctx.stats().decodeSteps;
      const spec = await runTask(ctx, { ...task, draft: { nMax: 32, ngram: true, fixed } });
      const steps = ctx.stats().decodeSteps - before;
      assert.deepEqual(spec.tokens, text, `fixed ${fixed}`);
      const drafted = spec.done.timings.draftN ?? 0;
      const accepted = spec.done.timings.draftAcceptedN ?? 0;
      // Steps: the prompt's (the prefix is cached: its last token), then one per verify; all but a few tokens came
      // from accepted drafts, many per step. With the cost model, whether drafting pays on this tiny model depends on
      // the measured step times (its weights fit in the cache, so a step of 33 tokens may cost 33 steps of one): only
      // what it drafts is judged.
      if (fixed) {
        assert.ok(accepted >= text.length * 0.6, `fixed: ${accepted} of ${text.length} accepted`);
        assert.ok(drafted > 4 * (steps - 1), `${drafted} drafted in ${steps - 1} generation steps`);
        assert.ok(steps <= text.length / 4, `${steps} steps for ${text.length} tokens`);
      } else {
        assert.ok(accepted >= drafted * 0.6, `cost model: ${accepted} of ${drafted} drafted accepted`);
      }
    }
  });

  it('n-gram drafts that are never accepted stop after a few, then only rare probes', async () => {
    // Output "a a x1 a a x2 …": the last two tokens "a a" always occurred before, followed by another x, so every
    // draft is rejected at its first token.
    const a = 1000;
    const forced = (n: number) => Array.from({ length: n }, (_, i) => (i % 3 === 2 ? 2000 + i : a));
    const tokens = Int32Array.from([1, 500, 501, 502]);
    const run = async (n: number, fixed: boolean) => {
      const r = await runTask(ctx, {
        tokens,
        nPredict: n,
        sampling: { ...GREEDY, grammar: tokenGrammar(forced(n)) },
        draft: { nMax: 16, ngram: true, fixed },
      });
      assert.deepEqual(r.tokens, forced(n));
      assert.equal(r.done.timings.draftAcceptedN ?? 0, 0);
      return r.done.timings.draftN ?? 0;
    };
    const always = await run(300, true);
    const short = await run(150, false);
    const long = await run(300, false);
    // Every third step finds a match: 100 drafts of up to 16 tokens without the cost model.
    assert.ok(always >= 100, `${always} drafted without the cost model`);
    // With it: a few drafts until the acceptance estimate falls, then probes every 8, 16, 32, … matching steps (none
    // at all where the measured step costs say that even an accepted draft would not pay, as on this tiny model when
    // the machine is idle). How soon it stops depends on those costs, so the bounds are loose; the count must not
    // keep growing with the output.
    assert.ok(short <= 40, `${short} drafted in 150 tokens`);
    assert.ok(long <= always / 4 && long - short <= 30, `${long} drafted in 300 tokens, ${short} in 150`);
  });

  it('the model as its own draft never drafts under the cost model; the output is unchanged', async () => {
    const self = await binding.Context.create(model, { nCtx: 512, nParallel: 1, nThreads: 2, draftModel: model });
    try {
      const phrase = Array.from(model.tokenize(' the quick brown fox jumps over the lazy dog,', false, false));
      const tokens = Int32Array.from([1, ...phrase, ...phrase]);
      const task = { tokens, nPredict: 48, ignoreEos: true };
      const base = await runTask(ctx, task);
      // A draft token costs at least the draft's share of the target's weights times a target step (DraftSizeRatio:
      // 1 here), so even a draft that is always accepted gives (1 + d) tokens for more than 1 + d steps' time: the
      // pair never drafts, whatever the measured times (on this tiny model they vary with the machine's load).
      const first = await runTask(self, { ...task, draft: { nMax: 4 } });
      const second = await runTask(self, { ...task, draft: { nMax: 4 } });
      assert.deepEqual(first.tokens, base.tokens);
      assert.deepEqual(second.tokens, base.tokens);
      assert.equal(first.done.timings.draftN, undefined, 'nothing drafted');
      assert.equal(second.done.timings.draftN, undefined, 'nothing drafted');
      const fixed = await runTask(self, { ...task, draft: { nMax: 4, fixed: true } });
      assert.deepEqual(fixed.tokens, base.tokens);
      const always = fixed.done.timings.draftN ?? 0;
      assert.ok(always >= 30, `${always} drafted without the cost model`);
    } finally {
      await self.dispose();
    }
  });

  it("a long prompt's draft catch-up is spread over steps while another slot keeps decoding", async () => {
    // n_batch 32: the draft context catches a slot up by at most 32 tokens per engine step.
    const shared = await binding.Context.create(model, {
      nCtx: 1024,
      nParallel: 2,
      nBatch: 32,
      nThreads: 2,
      draftModel: model,
    });
    try {
      const phrase = Array.from(model.tokenize(' the quick brown fox jumps over the lazy dog,', false, false));
      const longPrompt = Int32Array.from([1, ...Array.from({ length: 30 }, () => phrase).flat()]);
      assert.ok(longPrompt.length >= 300);
      const shortPrompt = Int32Array.from([1, ...phrase]);
      const order: string[] = [];
      const other = runTask(shared, { tokens: shortPrompt, nPredict: 120, ignoreEos: true }, () => order.push('B'));
      // Let B start generating first.
      while (order.length < 2) await new Promise((r) => setTimeout(r, 5));
      const drafting = runTask(
        shared,
        { tokens: longPrompt, nPredict: 48, ignoreEos: true, draft: { nMax: 4, fixed: true } },
        () => order.push('A'),
      );
      const [b, a] = await Promise.all([other, drafting]);
      const soloA = await runTask(ctx, { tokens: longPrompt, nPredict: 48, ignoreEos: true });
      const soloB = await runTask(ctx, { tokens: shortPrompt, nPredict: 120, ignoreEos: true });
      assert.deepEqual(a.tokens, soloA.tokens);
      assert.deepEqual(b.tokens, soloB.tokens);
      assert.ok((a.done.timings.draftAcceptedN ?? 0) > 0, 'A drafted once caught up');
      // A's tokens per step of B (B emits one token per step) from A's first token on: one each while A's draft
      // context catches up (≥ 300 / 32 steps), more once it drafts.
      const first = order.indexOf('A');
      const perStep: number[] = [];
      let count = 0;
      for (const who of order.slice(first)) {
        if (who === 'A') {
          count++;
        } else {
          perStep.push(count);
          count = 0;
        }
      }
      const catchUpSteps = Math.ceil(longPrompt.length / 32) - 1;
      assert.ok(perStep.length > catchUpSteps + 2, `B kept decoding: ${perStep.join(',')}`);
      assert.ok(
        perStep.slice(0, catchUpSteps).every((n) => n <= 1),
        `one token of A per step while catching up: ${perStep.join(',')}`,
      );
      assert.ok(
        perStep.some((n) => n > 1),
        `A drafted after the catch-up: ${perStep.join(',')}`,
      );
    } finally {
      await shared.dispose();
    }
  });
});
