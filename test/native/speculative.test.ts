// Speculative decoding (task.draft): drafts by n-gram lookup and by a draft model are verified in the target's batch,
// so greedy output is identical to decoding without them; limits (nPredict, the slot context, context shift, shared
// cells) hold with drafts in flight.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { TINY_LLAMA_SPM, TINY_QWEN2, ensureTestModels } from '../utils/models';
import { GREEDY, assertRejectsCode, assertThrowsCode, binding, loadModel, runTask, seeded } from './native-helpers';

ensureTestModels();

/** A prompt with a repeated phrase: the n-gram lookup finds continuations in it. */
function phrasePrompt(model: NativeModel): Int32Array {
  const phrase = Array.from(model.tokenize(' the quick brown fox jumps over the lazy dog,', false, false));
  return Int32Array.from([1, ...phrase, ...phrase, ...phrase]);
}

describe('speculative decoding', () => {
  let model: NativeModel;
  let draftModel: NativeModel;
  let plain: NativeContext;
  let drafted: NativeContext;

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    draftModel = await loadModel(TINY_LLAMA_SPM); // the target as its own draft: every draft token is accepted
    plain = new binding.Context(model, { nCtx: 512, nParallel: 2, nThreads: 2 });
    drafted = await binding.Context.create(model, { nCtx: 512, nParallel: 2, nThreads: 2, draftModel });
  });
  after(async () => {
    await plain.dispose();
    await drafted.dispose();
    await model.dispose();
    await draftModel.dispose();
  });

  it('n-gram drafts: the same greedy tokens, fewer decode steps, drafts counted', async () => {
    const tokens = phrasePrompt(model);
    const base = await runTask(plain, { tokens, nPredict: 96, ignoreEos: true });
    const stepsBefore = plain.stats().decodeSteps;
    const spec = await runTask(plain, { tokens, nPredict: 96, ignoreEos: true, draft: { nMax: 8, ngram: true } });
    const steps = plain.stats().decodeSteps - stepsBefore;
    assert.deepEqual(spec.tokens, base.tokens);
    assert.equal(spec.text, base.text);
    assert.ok((spec.done.timings.draftN ?? 0) > 0, 'something was drafted');
    const accepted = spec.done.timings.draftAcceptedN ?? 0;
    assert.ok(accepted > 0, 'something was accepted');
    // Each accepted token saved one step: the prompt's step plus one per token not drafted-and-accepted.
    assert.ok(steps <= 1 + 96 - accepted, `${steps} steps for ${accepted} accepted tokens`);
    assert.equal(base.done.timings.draftN, undefined);
  });

  it('a draft model: the same greedy tokens, the target as its own draft accepts (nearly) everything', async () => {
    const tokens = phrasePrompt(model);
    const base = await runTask(plain, { tokens, nPredict: 64, ignoreEos: true });
    // `fixed`: without the cost model, which stops a draft as slow as the target (below).
    const spec = await runTask(drafted, { tokens, nPredict: 64, ignoreEos: true, draft: { nMax: 4, fixed: true } });
    assert.deepEqual(spec.tokens, base.tokens);
    const drafts = spec.done.timings.draftN ?? 0;
    const accepted = spec.done.timings.draftAcceptedN ?? 0;
    assert.ok(drafts >= 40, `${drafts} drafted`);
    assert.ok(accepted >= drafts * 0.9, `${accepted} of ${drafts} accepted`);
    const stats = drafted.stats();
    assert.ok(stats.draftTokens >= drafts && stats.draftAccepted >= accepted);
    // The draft model's weights and KV cache are part of the context's memory.
    const total = (ctx: NativeContext) => ctx.memory().reduce((sum, e) => sum + e.model + e.context + e.compute, 0);
    assert.ok(total(drafted) > total(plain) * 1.5, `${total(drafted)} vs ${total(plain)}`);
  });

  it('keeps nPredict exact and stops at stop strings with drafts in flight', async () => {
    const tokens = phrasePrompt(model);
    for (const nPredict of [1, 2, 5, 17]) {
      const r = await runTask(drafted, { tokens, nPredict, ignoreEos: true, draft: { nMax: 8, fixed: true } });
      assert.equal(r.tokenEvents.length, nPredict);
      assert.equal(r.done.reason, 'length');
    }
    const base = await runTask(plain, { tokens, nPredict: 48, ignoreEos: true });
    const stop = base.text.slice(Math.floor(base.text.length / 2), Math.floor(base.text.length / 2) + 3);
    const expected = await runTask(plain, { tokens, nPredict: 48, ignoreEos: true, stop: [stop] });
    const r = await runTask(plain, {
      tokens,
      nPredict: 48,
      ignoreEos: true,
      stop: [stop],
      draft: { nMax: 8, ngram: true },
    });
    assert.equal(r.done.reason, expected.done.reason);
    assert.equal(r.text, expected.text);
  });

  it('the same greedy tokens across context shifts and at the end of the slot context', async () => {
    const small = new binding.Context(model, { nCtx: 96, nParallel: 1, nThreads: 2 });
    const smallDrafted = await binding.Context.create(model, { nCtx: 96, nParallel: 1, nThreads: 2, draftModel });
    try {
      const tokens = phrasePrompt(model).slice(0, 40);
      for (const contextShift of [true, false]) {
        const task = { tokens, nPredict: contextShift ? 200 : -1, ignoreEos: true, contextShift };
        const base = await runTask(small, task);
        const ngram = await runTask(small, { ...task, draft: { nMax: 8, ngram: true, fixed: true } });
        const draft = await runTask(smallDrafted, { ...task, draft: { nMax: 6, fixed: true } });
        assert.deepEqual(ngram.tokens, base.tokens, `ngram, contextShift ${contextShift}`);
        assert.deepEqual(draft.tokens, base.tokens, `draft model, contextShift ${contextShift}`);
        assert.equal(ngram.done.reason, base.done.reason);
      }
    } finally {
      await small.dispose();
      await smallDrafted.dispose();
    }
  });

  it('slots sharing one KV cache speculate together with their solo outputs', async () => {
    const shared = await binding.Context.create(model, {
      nCtx: 256,
      nParallel: 4,
      kvUnified: true,
      nThreads: 2,
      draftModel,
    });
    try {
      const tokens = phrasePrompt(model);
      const solo = await runTask(plain, { tokens, nPredict: 40, ignoreEos: true });
      const runs = await Promise.all(
        [0, 1, 2, 3].map((i) =>
          runTask(shared, {
            tokens,
            nPredict: 40,
            ignoreEos: true,
            draft: { nMax: 6, ngram: i % 2 === 0, fixed: true },
          }),
        ),
      );
      for (const r of runs) assert.deepEqual(r.tokens, solo.tokens);
      assert.ok(shared.stats().kvCellsUsed <= 256);
    } finally {
      await shared.dispose();
    }
  });

  it('seeded sampled output is token for token the same with drafts (one sample per emitted token)', async () => {
    // Batched and single-token decodes need not give bit-identical logits (ggml picks its kernels by batch size; on
    // some CPUs the difference flips a sample that lies near a boundary), so the choice sampled here is between two
    // tokens whose probabilities stay ½ whatever the logits' last bits: a grammar allows only those two, and
    // temperature 1000 flattens them. Which one comes is then decided by the seeded RNG alone, and a draw too many or
    // too few at a draft changes the rest of the output.
    const [a, b] = phrasePrompt(model).slice(2, 4); // two different tokens of the phrase
    const grammar = `root ::= (<[${a}]> | <[${b}]>)+`;
    const tokens = phrasePrompt(model);
    // No top-k / top-p / min-p: they sort the candidates by logit, and an order decided by rounding would move the
    // boundaries the RNG's draw falls between.
    const sampling = { ...seeded(7, 1000), topK: 0, topP: 1, minP: 0, grammar };
    const task = { tokens, nPredict: 48, ignoreEos: true, sampling };
    const base = await runTask(plain, task);
    const ngram = await runTask(plain, { ...task, draft: { nMax: 8, ngram: true, fixed: true } });
    const draft = await runTask(drafted, { ...task, draft: { nMax: 4, fixed: true } });
    assert.notEqual(a, b);
    assert.equal(new Set(base.tokens).size, 2, 'both tokens sampled');
    assert.deepEqual(ngram.tokens, base.tokens);
    assert.deepEqual(draft.tokens, base.tokens);
    assert.ok((ngram.done.timings.draftAcceptedN ?? 0) > 0, 'n-gram drafts accepted: several samples in one step');
    assert.ok((draft.done.timings.draftN ?? 0) > 0);
  });

  it('refuses a draft-model task on a context without one, and a draft model of another vocabulary', async () => {
    assertThrowsCode(
      () => plain.submit({ tokens: Int32Array.of(1, 2), nPredict: 4, sampling: GREEDY, draft: { nMax: 4 } }, () => {}),
      'LLAMA_INVALID_ARGUMENT',
    );
    const other = await loadModel(TINY_QWEN2);
    try {
      await assertRejectsCode(
        binding.Context.create(model, { nCtx: 128, nParallel: 1, draftModel: other }),
        'LLAMA_MODEL_LOAD_FAILED',
      );
      assertThrowsCode(() => new binding.Context(model, { nCtx: 128, draftModel: other }), 'LLAMA_MODEL_LOAD_FAILED');
    } finally {
      await other.dispose();
    }
  });
});
