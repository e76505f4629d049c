// LoRA adapters per task (NativeModel.loadLora, NativeTaskParams.loras) with tiny-llama-spm-lora.gguf.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { MODELS_DIR, TINY_LLAMA_SPM, TINY_QWEN2, ensureTestModels } from '../utils/models';
import { assertRejectsCode, assertThrowsCode, loadModel, runTask } from './native-helpers';
import { binding } from './native-helpers';

ensureTestModels();

/** Rank-4 LoRA for tiny-llama-spm (scripts/make-test-models.ts TINY_LLAMA_SPM_LORA), made with the tiny models. */
const TINY_LLAMA_SPM_LORA = join(MODELS_DIR, 'tiny-llama-spm-lora.gguf');
const N = 12;

describe('LoRA adapters per task', () => {
  let model: NativeModel;
  let ctx: NativeContext;
  let prompt: Int32Array;

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    // Two slots: tasks with different adapter sets run at the same time.
    ctx = new binding.Context(model, { nCtx: 512, nParallel: 2, nThreads: 2 });
    prompt = model.tokenize('Once upon a time', true, false);
    await model.loadLora(TINY_LLAMA_SPM_LORA);
  });

  after(async () => {
    await ctx?.dispose();
    await model?.dispose();
  });

  // Each run gets its own cache scope, so no run reuses another's KV prefix (as the runner does per adapter set).
  let scope = 0;
  const run = (loras?: { path: string; scale?: number }[]) =>
    runTask(ctx, { tokens: prompt, nPredict: N, cacheScope: `s${scope++}`, ...(loras ? { loras } : {}) });

  it('an adapter changes greedy output for its task only; scale 0 is the base weights', async () => {
    const base = await run();
    const adapted = await run([{ path: TINY_LLAMA_SPM_LORA }]);
    assert.equal(adapted.tokens.length, N);
    assert.notDeepEqual(adapted.tokens, base.tokens);
    assert.deepEqual((await run([{ path: TINY_LLAMA_SPM_LORA, scale: 1 }])).tokens, adapted.tokens);
    assert.deepEqual((await run([{ path: TINY_LLAMA_SPM_LORA, scale: 0 }])).tokens, base.tokens);
    // The next task without adapters runs on the base weights again.
    assert.deepEqual((await run()).tokens, base.tokens);
  });

  it('tasks with different adapter sets decode concurrently and give what each gives alone', async () => {
    const sets = [undefined, [{ path: TINY_LLAMA_SPM_LORA }], [{ path: TINY_LLAMA_SPM_LORA, scale: 0.5 }]];
    const alone = [];
    for (const set of sets) alone.push((await run(set)).tokens);
    assert.notDeepEqual(alone[1], alone[2]);
    for (const [a, b] of [
      [0, 1],
      [1, 2],
      [2, 0],
    ]) {
      const [ra, rb] = await Promise.all([run(sets[a]), run(sets[b])]);
      assert.deepEqual(ra.tokens, alone[a], `set ${a} beside set ${b}`);
      assert.deepEqual(rb.tokens, alone[b], `set ${b} beside set ${a}`);
    }
  });

  it('loadLora of a missing or non-adapter file rejects LLAMA_MODEL_LOAD_FAILED naming the path', async () => {
    for (const path of [`${TINY_LLAMA_SPM_LORA}.missing`, TINY_QWEN2]) {
      await assert.rejects(model.loadLora(path), (err: unknown) => {
        assert.equal((err as { code?: string }).code, 'LLAMA_MODEL_LOAD_FAILED');
        assert.ok((err as Error).message.includes(path), (err as Error).message);
        return true;
      });
    }
    assert.deepEqual(model.loras(), [TINY_LLAMA_SPM_LORA]);
  });

  it('a task naming an adapter that is not loaded, or malformed entries, throw LLAMA_INVALID_ARGUMENT', () => {
    for (const loras of [
      [{ path: `${TINY_LLAMA_SPM_LORA}.other` }],
      'x',
      [5],
      [{ path: '' }],
      [{ path: TINY_LLAMA_SPM_LORA, scale: 'big' }],
      [{ path: TINY_LLAMA_SPM_LORA, scale: Infinity }],
    ]) {
      assertThrowsCode(
        () =>
          ctx.submit({ tokens: prompt, nPredict: 1, loras: loras as unknown as { path: string }[] } as never, () => {}),
        'LLAMA_INVALID_ARGUMENT',
      );
    }
  });

  it('unloadLora frees an idle adapter; a later task naming it is refused until it is loaded again', async () => {
    const other = await loadModel(TINY_LLAMA_SPM);
    const c = new binding.Context(other, { nCtx: 256, nThreads: 2 });
    try {
      await other.loadLora(TINY_LLAMA_SPM_LORA);
      const first = await runTask(c, { tokens: prompt, nPredict: 4, loras: [{ path: TINY_LLAMA_SPM_LORA }] });
      assert.equal(await other.unloadLora(TINY_LLAMA_SPM_LORA), 'unloaded');
      assert.equal(await other.unloadLora(TINY_LLAMA_SPM_LORA), 'absent');
      assert.deepEqual(other.loras(), []);
      assertThrowsCode(
        () => c.submit({ tokens: prompt, nPredict: 1, loras: [{ path: TINY_LLAMA_SPM_LORA }] } as never, () => {}),
        'LLAMA_INVALID_ARGUMENT',
      );
      await other.loadLora(TINY_LLAMA_SPM_LORA);
      const again = await runTask(c, {
        tokens: prompt,
        nPredict: 4,
        loras: [{ path: TINY_LLAMA_SPM_LORA }],
        cacheScope: 'fresh',
      });
      assert.deepEqual(again.tokens, first.tokens);
      await assertRejectsCode(other.loadLora(''), 'LLAMA_INVALID_ARGUMENT');
    } finally {
      await c.dispose();
      await other.dispose();
    }
  });
});
