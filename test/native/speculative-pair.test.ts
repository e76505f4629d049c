// The agreeing pair of scripts/make-test-models (AGREEING_PAIRS.tiny): a target whose blocks 1.. write nothing into
// the residual stream and its 1-block draft of the same seeds. Greedy decoding of either gives the same tokens, so
// with that draft every drafted token is accepted — the construction the bench's agreeing pair (bench-agree) relies on.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { TINY_AGREE, TINY_AGREE_DRAFT, ensureTestModels } from '../utils/models';
import { binding, loadModel, runTask } from './native-helpers';

ensureTestModels();

const PROMPTS = [
  'Once upon a time',
  'The committee met on Tuesday to review the budget for the new library.',
  'function add(a, b) {\n  return a + b;\n}\n',
];
const PREDICT = 48;

describe('speculative decoding with an agreeing pair', () => {
  let target: NativeModel;
  let draft: NativeModel;
  let targetPlain: NativeContext;
  let draftPlain: NativeContext;
  let drafted: NativeContext;

  before(async () => {
    target = await loadModel(TINY_AGREE);
    draft = await loadModel(TINY_AGREE_DRAFT);
    targetPlain = new binding.Context(target, { nCtx: 512, nParallel: 1, nThreads: 2 });
    draftPlain = new binding.Context(draft, { nCtx: 512, nParallel: 1, nThreads: 2 });
    drafted = await binding.Context.create(target, { nCtx: 512, nParallel: 1, nThreads: 2, draftModel: draft });
  });
  after(async () => {
    await targetPlain.dispose();
    await draftPlain.dispose();
    await drafted.dispose();
    await target.dispose();
    await draft.dispose();
  });

  it('is a 4-block target over a 1-block draft of the same vocabulary and width', () => {
    const t = target.info();
    const d = draft.info();
    assert.equal(t.nLayer, 4);
    assert.equal(d.nLayer, 1);
    assert.equal(t.nVocab, d.nVocab);
    assert.equal(t.nEmbd, d.nEmbd);
  });

  it('the draft decodes greedily exactly what the target does', async () => {
    for (const text of PROMPTS) {
      const tokens = target.tokenize(text, true, false);
      const ours = await runTask(targetPlain, { tokens, nPredict: PREDICT, ignoreEos: true });
      const theirs = await runTask(draftPlain, { tokens, nPredict: PREDICT, ignoreEos: true });
      assert.equal(ours.tokens.length, PREDICT);
      assert.deepEqual(theirs.tokens, ours.tokens, `prompt ${JSON.stringify(text)}`);
    }
  });

  it('decodes more than a repeat of one token: the block that is not silent shapes the output', async () => {
    // A random model dominated by its tied embeddings repeats the prompt's last token, which any two such models
    // would agree on; this pair's output moves from token to token.
    for (const text of PROMPTS) {
      const tokens = target.tokenize(text, true, false);
      const ours = await runTask(targetPlain, { tokens, nPredict: PREDICT, ignoreEos: true });
      assert.ok(new Set(ours.tokens).size >= 2, `prompt ${JSON.stringify(text)}: ${ours.tokens.join(' ')}`);
    }
  });

  it('with the draft, every drafted token is accepted and the output is the target’s', async () => {
    for (const text of PROMPTS) {
      const tokens = target.tokenize(text, true, false);
      const base = await runTask(targetPlain, { tokens, nPredict: PREDICT, ignoreEos: true });
      // `fixed`: drafts of 8 at every step, whatever the cost model would measure on a model this small (its step
      // time is mostly fixed cost, so a 1-block draft is not much cheaper than the 4-block target); the bench's
      // agreeing pair (bench-agree) measures the cost model on a real-sized pair.
      const spec = await runTask(drafted, {
        tokens,
        nPredict: PREDICT,
        ignoreEos: true,
        draft: { nMax: 8, fixed: true },
      });
      assert.deepEqual(spec.tokens, base.tokens, `prompt ${JSON.stringify(text)}`);
      const drafts = spec.done.timings.draftN ?? 0;
      const accepted = spec.done.timings.draftAcceptedN ?? 0;
      assert.ok(drafts >= PREDICT / 2, `${drafts} drafted`);
      assert.equal(accepted, drafts, `${accepted} of ${drafts} accepted`);
    }
  });
});
