import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { truncatePrompt } from '../../../../src/generation/prompt/fit';

describe('truncatePrompt (§4.4, n_keep)', () => {
  const seq = (n: number) => Array.from({ length: n }, (_, i) => i);

  it('leaves prompts that fit unchanged', () => {
    const tokens = seq(10);
    assert.deepEqual(truncatePrompt(tokens, 11, 4, true), { tokens, dropped: 0 });
  });

  it('keeps num_keep (+BOS) tokens and the most recent ones, leaving room to generate', () => {
    const { tokens, dropped } = truncatePrompt(seq(100), 40, 4, true);
    assert.deepEqual(tokens.slice(0, 5), [0, 1, 2, 3, 4]);
    assert.equal(tokens.at(-1), 99);
    assert.ok(tokens.length < 40);
    assert.ok(tokens.length <= 5 + Math.floor((40 - 5) / 2));
    assert.equal(dropped, 100 - tokens.length);
    // The kept tail is contiguous.
    const tail = tokens.slice(5);
    tail.forEach((t, i) => i > 0 && assert.equal(t, tail[i - 1] + 1));
  });

  it('never fails, even for tiny contexts or a large num_keep', () => {
    for (const [n, ctx, keep] of [
      [10, 4, 0],
      [1000, 4, 100],
      [5, 5, 4],
      [4096, 512, 4],
    ]) {
      const out = truncatePrompt(seq(n), ctx, keep, false).tokens;
      assert.ok(out.length < ctx && out.length > 0, `n=${n} ctx=${ctx} keep=${keep} → ${out.length}`);
      assert.equal(out.at(-1), n - 1);
    }
  });
});
