// Cache scopes (NativeTaskParams.cacheScope; docs/security.md "Cache scope"): the KV prefix a slot keeps, and the
// host-RAM prompt cache entries, are reused only by tasks of the scope that filled them. A task of another scope with
// the same prompt evaluates all of it (timings.promptN = the whole prompt), and leaves the first scope's caches usable
// by that scope.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NativeContext } from '../../binding';
import { TINY_LLAMA_SPM, TINY_MMPROJ, ensureTestModels } from '../utils/models';
import { testPng } from '../utils/png';
import {
  assertThrowsCode,
  binding,
  GREEDY,
  heldAfter,
  loadModel,
  runTask,
  tokensOf,
  useModelContexts,
} from './native-helpers';

ensureTestModels();

const MIB = 1024 * 1024;

interface Turn {
  promptN: number;
  promptTotal: number;
  generated: number[];
}

/** One greedy task of `scope` (undefined: no cacheScope, the shared scope). */
async function turn(
  ctx: NativeContext,
  tokens: number[],
  scope: string | undefined,
  extra: Record<string, unknown> = {},
): Promise<Turn> {
  const r = await runTask(ctx, {
    tokens: Int32Array.from(tokens),
    nPredict: 8,
    ignoreEos: true,
    ...(scope !== undefined ? { cacheScope: scope } : {}),
    ...extra,
  });
  return { promptN: r.done.timings.promptN, promptTotal: r.done.timings.promptTotal, generated: r.tokens };
}

describe('cache scopes', () => {
  const fx = useModelContexts(TINY_LLAMA_SPM);
  const open = fx.open;

  it('a slot filled by one scope gives another scope no prefix; its own scope reuses it', async () => {
    const ctx = open({ nCtx: 512 });
    const prompt = tokensOf(fx.model, 1, 150);
    const first = await turn(ctx, prompt, 'aaaa');
    assert.equal(first.promptN, prompt.length);
    const other = await turn(ctx, prompt, 'bbbb');
    assert.equal(other.promptN, prompt.length, 'scope b evaluates the whole prompt (not even the BOS is reused)');
    assert.equal(other.promptTotal, prompt.length);
    const sameAsB = await turn(ctx, prompt, 'bbbb');
    assert.equal(sameAsB.promptN, 1, 'scope b reuses its own prefix: only the last token is evaluated');
    const backToA = await turn(ctx, prompt, 'aaaa');
    assert.equal(backToA.promptN, prompt.length, 'the slot now holds scope b: scope a starts over');
    // The unscoped (shared) scope is a scope of its own.
    assert.equal((await turn(ctx, prompt, undefined)).promptN, prompt.length);
    assert.equal((await turn(ctx, prompt, undefined)).promptN, 1);
    assert.deepEqual(other.generated, first.generated, 'the output does not depend on the scope');
  });

  for (const params of [
    { nCtx: 1024, nParallel: 2 },
    { nCtx: 1024, nParallel: 4, kvUnified: true },
  ]) {
    it(`with several slots another scope takes an empty slot and the owner's prefix survives (${JSON.stringify(params)})`, async () => {
      const ctx = open(params);
      const prompt = tokensOf(fx.model, 2, 150);
      await turn(ctx, prompt, 'aaaa');
      assert.equal((await turn(ctx, prompt, 'bbbb')).promptN, prompt.length);
      assert.equal((await turn(ctx, prompt, 'aaaa')).promptN, 1, "scope a's slot was left alone");
      assert.equal((await turn(ctx, prompt, 'bbbb')).promptN, 1, "scope b's slot too");
    });
  }

  it('a sequence kept in host RAM is restored only for its own scope (one slot)', async () => {
    const ctx = open({ nCtx: 512, cacheRamBytes: 64 * MIB });
    const a = tokensOf(fx.model, 3, 150);
    const first = await turn(ctx, a, 'aaaa');
    // Conversation B (another scope, no common token) takes the only slot: A goes to the RAM cache.
    await turn(ctx, tokensOf(fx.model, 4, 120, false), 'bbbb');
    assert.equal(ctx.stats().ramCacheEntries, 1);
    const again = [...heldAfter(a, first.generated), ...tokensOf(fx.model, 5, 9, false)];
    const probe = await turn(ctx, again, 'bbbb');
    assert.equal(probe.promptN, again.length, "scope b gets nothing of A's kept state");
    assert.equal(ctx.stats().ramCacheHits, 0);
    const back = await turn(ctx, again, 'aaaa');
    assert.equal(back.promptN, 9, 'scope a gets its conversation back: only its new tokens are evaluated');
    assert.equal(ctx.stats().ramCacheHits, 1);
    assert.deepEqual(back.generated, probe.generated, 'same output restored or evaluated');
    // B's probe (same tokens as A's, scope b) was kept for scope b when A took the slot back: b finds it now.
    const bBack = await turn(ctx, [...heldAfter(again, probe.generated), 7], 'bbbb');
    assert.equal(bBack.promptN, 1);
    assert.equal(ctx.stats().ramCacheHits, 2);
  });

  it('a slot taken by another scope drops its draft sequence too, with the same output', async () => {
    const draftModel = await loadModel(TINY_LLAMA_SPM);
    const ctx = await binding.Context.create(fx.model, { nCtx: 512, nThreads: 1, nThreadsMax: 2, draftModel });
    try {
      const draft = { draft: { nMax: 4, fixed: true }, nPredict: 24 }; // fixed: a self-draft would not pay
      const prompt = tokensOf(fx.model, 6, 100);
      const a = await turn(ctx, prompt, 'aaaa', draft);
      const b = await turn(ctx, prompt, 'bbbb', draft);
      assert.equal(b.promptN, prompt.length);
      assert.deepEqual(b.generated, a.generated);
      const reference = await turn(open({ nCtx: 512 }), prompt, undefined, { nPredict: 24 });
      assert.deepEqual(b.generated, reference.generated);
    } finally {
      await ctx.dispose();
      await draftModel.dispose();
    }
  });

  it('the text before an image is not reused across scopes', async () => {
    const ctx = open({ nCtx: 512, projectorPath: TINY_MMPROJ });
    const text = 'a long introduction that both prompts share word for word, before the picture';
    const media = { tokens: new Int32Array(0), prompt: `${text}<__media__> what is it?`, nPredict: 2 };
    const image = new Uint8Array(testPng());
    await runTask(ctx, { ...media, images: [image], cacheScope: 'aaaa' });
    const plain = [...fx.model.tokenize(text, true, true), ...tokensOf(fx.model, 7, 5, false)];
    const other = await turn(ctx, plain, 'bbbb');
    assert.equal(other.promptN, plain.length, 'scope b evaluates all of it');
    await runTask(ctx, { ...media, images: [image], cacheScope: 'aaaa' });
    const same = await turn(ctx, plain, 'aaaa');
    assert.ok(same.promptN < plain.length - 5, `scope a reuses the text prefix (promptN ${same.promptN})`);
  });

  it('cacheScope must be a string of at most 256 bytes', () => {
    const ctx = open({ nCtx: 64 });
    const task = { tokens: Int32Array.of(1, 5), nPredict: 1, sampling: GREEDY };
    assertThrowsCode(
      () => ctx.submit({ ...task, cacheScope: 5 as unknown as string }, () => {}),
      'LLAMA_INVALID_ARGUMENT',
    );
    assertThrowsCode(() => ctx.submit({ ...task, cacheScope: 'x'.repeat(257) }, () => {}), 'LLAMA_INVALID_ARGUMENT');
  });
});
