// Embedding contexts: embed() on the decode thread, batch packing, pooling, errors.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { TINY_BERT, TINY_LLAMA_SPM, TINY_NOMIC_BERT, ensureTestModels } from '../utils/models';
import { assertRejectsCode, assertThrowsCode, BATCH_TOLERANCE, binding, loadModel } from './native-helpers';

ensureTestModels();

const TEXTS = [
  'hello world',
  'the quick brown fox jumps over the lazy dog',
  'embeddings are vectors',
  'a',
  'llamas live in the andes and eat grass all day long',
];

function assertClose(a: Float32Array, b: Float32Array, tolerance: number, what: string): void {
  assert.equal(a.length, b.length, `${what}: length`);
  for (let i = 0; i < a.length; i++) {
    // Relative to the component's size, with an absolute floor for components near 0.
    assert.ok(Math.abs(a[i] - b[i]) <= tolerance * Math.max(1, Math.abs(b[i])), `${what}: [${i}] ${a[i]} vs ${b[i]}`);
  }
}

for (const [name, path] of [
  ['tiny-bert', TINY_BERT],
  ['tiny-nomic-bert', TINY_NOMIC_BERT],
] as const) {
  describe(`embeddings on ${name}`, () => {
    let model: NativeModel;
    let ctx: NativeContext;
    let inputs: Int32Array[];
    let nEmbd: number;

    before(async () => {
      model = await loadModel(path);
      nEmbd = model.info().nEmbd;
      ctx = new binding.Context(model, { nCtx: 512, nBatch: 512, nParallel: 4, nThreads: 2, embeddings: true });
      inputs = TEXTS.map((t) => model.tokenize(t, true, false));
    });
    after(async () => {
      await ctx.dispose();
      await model.dispose();
    });

    it('returns one n_embd vector per input, finite and not normalized', async () => {
      const out = await ctx.embed(inputs);
      assert.equal(out.length, inputs.length);
      for (const v of out) {
        assert.ok(v instanceof Float32Array);
        assert.equal(v.length, nEmbd);
        assert.ok(v.every((x) => Number.isFinite(x)));
      }
      const norms = out.map((v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0)));
      assert.ok(
        norms.some((n) => Math.abs(n - 1) > 1e-3),
        'vectors are not unit length',
      );
      assert.notDeepEqual(out[0], out[1]);
    });

    it('a batched call equals one-at-a-time calls, in order', async () => {
      const batched = await ctx.embed(inputs);
      for (let i = 0; i < inputs.length; i++) {
        const [single] = await ctx.embed([inputs[i]]);
        assertClose(batched[i], single, BATCH_TOLERANCE, `input ${i}`);
      }
      const reversed = await ctx.embed([...inputs].reverse());
      for (let i = 0; i < inputs.length; i++) {
        assertClose(reversed[inputs.length - 1 - i], batched[i], BATCH_TOLERANCE, `rev ${i}`);
      }
    });

    it('embeds many inputs in one call and concurrent calls', async () => {
      const many = Array.from({ length: 300 }, (_, i) => inputs[i % inputs.length]);
      const [all, other] = await Promise.all([ctx.embed(many), ctx.embed(inputs.slice(0, 2))]);
      assert.equal(all.length, 300);
      const reference = await ctx.embed(inputs);
      for (let i = 0; i < 300; i++) assertClose(all[i], reference[i % inputs.length], BATCH_TOLERANCE, `many ${i}`);
      assertClose(other[1], reference[1], BATCH_TOLERANCE, 'concurrent');
      assert.deepEqual(await ctx.embed([]), []);
    });

    it('packs short inputs around long ones (first fit) and keeps the input order', async () => {
      const long = (n: number): Int32Array => Int32Array.from({ length: n }, (_, i) => inputs[0][i % inputs[0].length]);
      // Slots of 128 tokens, batches of 512: four 110-token inputs fill a batch but leave room for the short ones
      // that come after the fifth, which waits for the next batch.
      const mixed = [long(110), long(110), long(110), long(110), long(110), inputs[1], long(110), inputs[2]];
      const batched = await ctx.embed(mixed);
      for (let i = 0; i < mixed.length; i++) {
        const [single] = await ctx.embed([mixed[i]]);
        assertClose(batched[i], single, BATCH_TOLERANCE, `mixed ${i}`);
      }
    });

    it('rejects bad inputs and submit()', async () => {
      const tooLong = new Int32Array(ctx.stats().nCtxSlot + 1).fill(inputs[0][1]);
      await assertRejectsCode(ctx.embed([inputs[0], tooLong]), 'LLAMA_EXCEED_CONTEXT');
      await assertRejectsCode(ctx.embed([new Int32Array(0)]), 'LLAMA_INVALID_ARGUMENT');
      await assertRejectsCode(ctx.embed([Int32Array.from([1 << 30])]), 'LLAMA_INVALID_ARGUMENT');
      await assertRejectsCode(ctx.embed([[1, 2] as unknown as Int32Array]), 'LLAMA_INVALID_ARGUMENT');
      assertThrowsCode(
        () => ctx.submit({ tokens: inputs[0], nPredict: 1, sampling: undefined as never }, () => {}),
        'LLAMA_INVALID_ARGUMENT',
      );
    });
  });
}

describe('embedding edge cases', () => {
  it('pooling cls differs from mean; a call pending at dispose settles; later calls reject LLAMA_DISPOSED', async () => {
    const model = await loadModel(TINY_BERT);
    const input = model.tokenize('hello world', true, false);
    const mean = new binding.Context(model, { nCtx: 256, nThreads: 2, embeddings: true, poolingType: 'mean' });
    const cls = new binding.Context(model, { nCtx: 256, nThreads: 2, embeddings: true, poolingType: 'cls' });
    const [a] = await mean.embed([input]);
    const [b] = await cls.embed([input]);
    assert.notDeepEqual(a, b);
    const pending = mean.embed([input, input]).then(
      (v) => v.length,
      (e: unknown) => (e as { code?: string }).code,
    );
    await mean.dispose();
    const settled = await pending;
    assert.ok(settled === 2 || settled === 'LLAMA_DISPOSED', String(settled));
    await assertRejectsCode(mean.embed([input]), 'LLAMA_DISPOSED');
    await cls.dispose();
    await model.dispose();
  });

  it('embed() on a generation context rejects with LLAMA_INVALID_ARGUMENT', async () => {
    const model = await loadModel(TINY_LLAMA_SPM);
    const ctx = new binding.Context(model, { nCtx: 256, nThreads: 2 });
    await assertRejectsCode(ctx.embed([Int32Array.from([1, 2])]), 'LLAMA_INVALID_ARGUMENT');
    await ctx.dispose();
    await model.dispose();
  });

  it('a decoder model can embed (llama_decode path, last pooling)', async () => {
    const model = await loadModel(TINY_LLAMA_SPM);
    const ctx = new binding.Context(model, {
      nCtx: 512,
      nParallel: 2,
      nThreads: 2,
      embeddings: true,
      poolingType: 'last',
    });
    const inputs = ['hello there', 'general kenobi', 'you are a bold one'].map((t) => model.tokenize(t, true, false));
    const batched = await ctx.embed(inputs);
    for (let i = 0; i < inputs.length; i++) {
      const [single] = await ctx.embed([inputs[i]]);
      assertClose(batched[i], single, 1e-3, `decoder input ${i}`);
    }
    await ctx.dispose();
    await model.dispose();
  });
});
