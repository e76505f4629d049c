// LoRA adapters at context creation (NativeContextParams.loraAdapters) with tiny-llama-spm-lora.gguf.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { MODELS_DIR, TINY_LLAMA_SPM, TINY_QWEN2, ensureTestModels } from '../utils/models';
import { assertThrowsCode, binding, loadModel, runTask } from './native-helpers';

ensureTestModels();

/** Rank-4 LoRA for tiny-llama-spm (scripts/make-test-models.ts TINY_LLAMA_SPM_LORA), made with the tiny models. */
const TINY_LLAMA_SPM_LORA = join(MODELS_DIR, 'tiny-llama-spm-lora.gguf');

describe('LoRA adapters', () => {
  let model: NativeModel;
  let prompt: Int32Array;
  const contexts: NativeContext[] = [];

  const context = (loraAdapters?: { path: string; scale?: number }[]): NativeContext => {
    const ctx = new binding.Context(model, { nCtx: 256, nThreads: 2, ...(loraAdapters ? { loraAdapters } : {}) });
    contexts.push(ctx);
    return ctx;
  };

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    prompt = model.tokenize('Once upon a time', true, false);
  });

  after(async () => {
    for (const ctx of contexts) await ctx.dispose();
    await model?.dispose();
  });

  it('an adapter changes greedy output; scale 0 and a second context of the same model do not', async () => {
    const base = await runTask(context(), { tokens: prompt, nPredict: 12 });
    const adapted = await runTask(context([{ path: TINY_LLAMA_SPM_LORA }]), { tokens: prompt, nPredict: 12 });
    assert.equal(adapted.tokens.length, base.tokens.length);
    assert.notDeepEqual(adapted.tokens, base.tokens);
    // Deterministic: the cached adapter gives the same output in another context.
    const again = await runTask(context([{ path: TINY_LLAMA_SPM_LORA, scale: 1 }]), { tokens: prompt, nPredict: 12 });
    assert.deepEqual(again.tokens, adapted.tokens);
    const off = await runTask(context([{ path: TINY_LLAMA_SPM_LORA, scale: 0 }]), { tokens: prompt, nPredict: 12 });
    assert.deepEqual(off.tokens, base.tokens);
    // Adapters are per context: the plain context still generates the base output.
    const plain = await runTask(contexts[0], { tokens: prompt, nPredict: 12 });
    assert.deepEqual(plain.tokens, base.tokens);
  });

  it('a missing or non-adapter file is LLAMA_MODEL_LOAD_FAILED naming the path', () => {
    for (const path of [`${TINY_LLAMA_SPM_LORA}.missing`, TINY_QWEN2]) {
      assert.throws(
        () => new binding.Context(model, { nCtx: 64, nThreads: 1, loraAdapters: [{ path }] }),
        (err: unknown) => {
          assert.equal((err as { code?: string }).code, 'LLAMA_MODEL_LOAD_FAILED');
          assert.ok((err as Error).message.includes(path), (err as Error).message);
          return true;
        },
      );
    }
  });

  it('malformed entries are LLAMA_INVALID_ARGUMENT', () => {
    for (const loraAdapters of [
      'x',
      [5],
      [{ path: '' }],
      [{ path: TINY_LLAMA_SPM_LORA, scale: 'big' }],
      [{ path: TINY_LLAMA_SPM_LORA, scale: Infinity }],
    ]) {
      assertThrowsCode(
        () =>
          new binding.Context(model, {
            nCtx: 64,
            nThreads: 1,
            loraAdapters: loraAdapters as unknown as { path: string }[],
          }),
        'LLAMA_INVALID_ARGUMENT',
      );
    }
  });
});
