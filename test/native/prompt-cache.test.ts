// The host-RAM prompt cache (params.cacheRamBytes): a conversation whose slot was taken by another one is restored
// from process memory when it comes back (only its new tokens are evaluated), with the output it would have had; the
// byte budget bounds it (least recently used out first); a context-shifted sequence round-trips; budget 0 is off.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { TINY_LLAMA_SPM, ensureTestModels } from '../utils/models';
import { binding, heldAfter, loadModel, runTask, tokensOf, useModelContexts } from './native-helpers';

ensureTestModels();

const MIB = 1024 * 1024;

interface Turn {
  tokens: number[];
  promptN: number;
  generated: number[];
}

async function turn(ctx: NativeContext, tokens: number[], extra: Record<string, unknown> = {}): Promise<Turn> {
  const r = await runTask(ctx, { tokens: Int32Array.from(tokens), nPredict: 12, ignoreEos: true, ...extra });
  return { tokens, promptN: r.done.timings.promptN, generated: r.tokens };
}

/**
 * Conversation A (one turn), then B in the same single slot (or, with a shared cache, big enough to need A's cells),
 * then A again with its answer and `more` new tokens. Returns the three turns.
 */
async function evictAndReturn(
  ctx: NativeContext,
  model: NativeModel,
  sizes: { a: number; b: number; more: number; bBos?: boolean },
) {
  const a = await turn(ctx, tokensOf(model, 1, sizes.a));
  const b = await turn(ctx, tokensOf(model, 2, sizes.b, sizes.bBos ?? true));
  const again = [...heldAfter(a.tokens, a.generated), ...tokensOf(model, 3, sizes.more, false)];
  const back = await turn(ctx, again);
  return { a, b, back };
}

describe('the host-RAM prompt cache', () => {
  const fx = useModelContexts(TINY_LLAMA_SPM);
  const open = fx.open;

  it('restores an evicted conversation in a single slot: only its new tokens are evaluated, same output', async () => {
    const sizes = { a: 150, b: 120, more: 9 };
    const cached = open({ nCtx: 512, cacheRamBytes: 64 * MIB });
    const { back } = await evictAndReturn(cached, fx.model, sizes);
    const stats = cached.stats();
    assert.equal(back.promptN, sizes.more, 'only the tokens after the restored prefix are evaluated');
    assert.equal(stats.ramCacheHits, 1);
    assert.equal(stats.ramCacheTokens, back.tokens.length - sizes.more);
    // B was kept when A took the slot back; A left the cache (the slot holds it now).
    assert.equal(stats.ramCacheEntries, 1);
    assert.ok(stats.ramCacheBytes > 0 && stats.ramCacheBytes <= 64 * MIB);

    const off = open({ nCtx: 512, cacheRamBytes: 0 });
    const reference = await evictAndReturn(off, fx.model, sizes);
    // Without the cache all is evaluated again but the BOS, which B's cache in the slot starts with as well.
    assert.equal(reference.back.promptN, back.tokens.length - 1, 'the whole prompt is evaluated again');
    assert.equal(off.stats().ramCacheEntries, 0);
    assert.equal(off.stats().ramCacheHits, 0);
    assert.deepEqual(back.generated, reference.back.generated, 'greedy output as without the cache');
  });

  it('keeps an idle cache a shared KV cache drops for cells, and restores it', async () => {
    // 4 slots over 512 shared cells: B (no common prefix with A, so it starts in an empty slot) needs 360 + 12 cells,
    // 351 are free: A's idle cache (150 + 11 cells) is dropped. A then needs B's for its restore.
    const sizes = { a: 150, b: 360, more: 9, bBos: false };
    const cached = open({ nCtx: 512, nParallel: 4, kvUnified: true, cacheRamBytes: 64 * MIB });
    const { back } = await evictAndReturn(cached, fx.model, sizes);
    assert.equal(back.promptN, sizes.more);
    assert.equal(cached.stats().ramCacheHits, 1);
    assert.ok(cached.stats().kvCellsCached + cached.stats().kvCellsUsed <= 512);

    const off = open({ nCtx: 512, nParallel: 4, kvUnified: true });
    const reference = await evictAndReturn(off, fx.model, sizes);
    assert.equal(reference.back.promptN, back.tokens.length);
    assert.deepEqual(back.generated, reference.back.generated);
  });

  it('restores into an empty slot, leaving the other idle slots their prefixes', async () => {
    // 4 slots with room to spare: B (sharing A's BOS) takes A's slot, so A is kept in RAM; A comes back into an empty
    // slot and B, still in its own, comes back from there.
    const ctx = open({ nCtx: 1024, nParallel: 4, kvUnified: true, cacheRamBytes: 64 * MIB });
    const { b, back } = await evictAndReturn(ctx, fx.model, { a: 150, b: 120, more: 9 });
    assert.equal(back.promptN, 9);
    assert.equal(ctx.stats().ramCacheHits, 1);
    const bBack = await turn(ctx, [...heldAfter(b.tokens, b.generated), ...tokensOf(fx.model, 4, 7, false)]);
    assert.equal(bBack.promptN, 7, 'B kept its slot');
    assert.equal(ctx.stats().ramCacheHits, 1, 'B was not restored from RAM');
  });

  it('restores a sequence into another slot of its own KV stream (OLLAMA_NUM_PARALLEL=2)', async () => {
    // Two slots of 512 cells each: A is saved from slot 0 when B takes it, and restored into the empty slot 1.
    const sizes = { a: 150, b: 120, more: 9 };
    const ctx = open({ nCtx: 1024, nParallel: 2, cacheRamBytes: 64 * MIB });
    const { back } = await evictAndReturn(ctx, fx.model, sizes);
    assert.equal(back.promptN, sizes.more);
    assert.equal(ctx.stats().ramCacheHits, 1);
    const reference = await evictAndReturn(open({ nCtx: 1024, nParallel: 2 }), fx.model, sizes);
    assert.deepEqual(back.generated, reference.back.generated);
  });

  it('a restored slot drafts with the draft model and gives the output it would without either', async () => {
    // The draft context syncs its sequence for a slot by tokens: a restore (into another slot here) must not confuse
    // it. The target is its own draft, so drafts are accepted and the output stays greedy.
    const draftModel = await loadModel(TINY_LLAMA_SPM);
    const ctx = await binding.Context.create(fx.model, {
      nCtx: 1024,
      nParallel: 2,
      nThreads: 1,
      nThreadsMax: 2,
      draftModel,
      cacheRamBytes: 64 * MIB,
    });
    try {
      const draft = { draft: { nMax: 4, fixed: true } }; // fixed: the model as its own draft would not pay
      const a = await turn(ctx, tokensOf(fx.model, 1, 150), draft);
      await turn(ctx, tokensOf(fx.model, 2, 120), draft);
      const again = [...heldAfter(a.tokens, a.generated), ...tokensOf(fx.model, 3, 9, false)];
      const back = await turn(ctx, again, draft);
      assert.equal(ctx.stats().ramCacheHits, 1);
      assert.ok(back.promptN <= 10, `promptN ${back.promptN}`);
      const reference = await turn(open({ nCtx: 1024, nParallel: 2 }), again);
      assert.deepEqual(back.generated, reference.generated);
    } finally {
      await ctx.dispose();
      await draftModel.dispose();
    }
  });

  it('does not keep short sequences', async () => {
    const ctx = open({ nCtx: 256, cacheRamBytes: 64 * MIB });
    const { back } = await evictAndReturn(ctx, fx.model, { a: 20, b: 20, more: 4 });
    assert.equal(back.promptN, back.tokens.length - 1); // all but the BOS B held too
    assert.equal(ctx.stats().ramCacheEntries, 0);
  });

  it('stays within its byte budget, least recently used out first', async () => {
    // The size of one kept sequence of 100 + 11 tokens.
    const probe = open({ nCtx: 256, cacheRamBytes: 64 * MIB });
    await turn(probe, tokensOf(fx.model, 10, 100));
    await turn(probe, tokensOf(fx.model, 11, 100));
    const one = probe.stats().ramCacheBytes;
    assert.equal(probe.stats().ramCacheEntries, 1);
    assert.ok(one > 0);

    const budget = Math.floor(one * 1.5);
    const ctx = open({ nCtx: 256, cacheRamBytes: budget });
    const a = await turn(ctx, tokensOf(fx.model, 10, 100));
    const b = await turn(ctx, tokensOf(fx.model, 11, 100));
    await turn(ctx, tokensOf(fx.model, 12, 100)); // A out (LRU), B in
    assert.equal(ctx.stats().ramCacheEntries, 1);
    assert.ok(ctx.stats().ramCacheBytes <= budget);
    const more = tokensOf(fx.model, 13, 5, false);
    const bBack = await turn(ctx, [...heldAfter(b.tokens, b.generated), ...more]);
    assert.equal(bBack.promptN, more.length, 'B is still kept');
    const aBack = await turn(ctx, [...heldAfter(a.tokens, a.generated), ...more]);
    assert.equal(aBack.promptN, aBack.tokens.length - 1, 'A was pushed out (only the BOS B held is reused)');
    assert.equal(ctx.stats().ramCacheHits, 1);
    assert.ok(ctx.stats().ramCacheBytes <= budget);
  });

  it('restores a context-shifted sequence with the output the slot itself would give', async () => {
    // A 128-token slot: 40 prompt tokens kept (nKeep -1), 150 generated: the slot shifts its context twice.
    const N_CTX = 128;
    const prompt = tokensOf(fx.model, 20, 40);
    const shifted = { nPredict: 150, contextShift: true, nKeep: -1 };
    const run = async (ctx: NativeContext, evict: boolean): Promise<Turn> => {
      const a = await turn(ctx, prompt, shifted);
      assert.equal(a.generated.length, 150);
      if (evict) await turn(ctx, tokensOf(fx.model, 21, 80));
      // What the slot holds after the shifts (Engine::ShiftContext): the prompt, then the undiscarded tail.
      const held = [...prompt];
      a.generated.forEach((token, i) => {
        if (i === a.generated.length - 1) return; // the last sampled token is never decoded
        if (held.length >= N_CTX) {
          const left = held.length - prompt.length;
          held.splice(prompt.length, Math.min(Math.floor(left / 2), left - 1));
        }
        held.push(token);
      });
      return turn(ctx, [...held, ...tokensOf(fx.model, 22, 6, false)]);
    };
    const cached = open({ nCtx: N_CTX, cacheRamBytes: 64 * MIB });
    const restored = await run(cached, true);
    assert.equal(cached.stats().ramCacheHits, 1);
    assert.equal(restored.promptN, 6);
    // The same shifted KV reused in place (no eviction, no cache): the restore must have brought back exactly it.
    const inPlace = await run(open({ nCtx: N_CTX }), false);
    assert.equal(inPlace.promptN, 6);
    assert.deepEqual(restored.generated, inPlace.generated);
  });
});
