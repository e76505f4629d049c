// Images through mtmd: a context with a projector (tiny-mmproj.gguf), tasks with `prompt` + `images`.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { TINY_LLAMA_SPM, TINY_MMPROJ, ensureTestModels } from '../utils/models';
import { testPng } from '../utils/png';
import { GREEDY, assertRejectsCode, assertThrowsCode, binding, loadModel, runTask } from './native-helpers';

ensureTestModels();

const MARKER = '<__media__>';
const EMPTY = new Int32Array(0);

describe('vision (mtmd projector)', () => {
  let model: NativeModel;
  let ctx: NativeContext;

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    ctx = new binding.Context(model, { nCtx: 512, nParallel: 2, nThreads: 2, projectorPath: TINY_MMPROJ });
  });

  after(async () => {
    await ctx?.dispose();
    await model?.dispose();
  });

  it('a missing projector file is LLAMA_MODEL_LOAD_FAILED', () => {
    assertThrowsCode(
      () => new binding.Context(model, { nCtx: 64, nThreads: 1, projectorPath: `${TINY_MMPROJ}.missing` }),
      'LLAMA_MODEL_LOAD_FAILED',
    );
  });

  it('projectorPath must be a string', () => {
    assertThrowsCode(
      () => new binding.Context(model, { nCtx: 64, nThreads: 1, projectorPath: 5 as unknown as string }),
      'LLAMA_INVALID_ARGUMENT',
    );
  });

  it('a media task can be cancelled while generating', async () => {
    const result = await runTask(
      ctx,
      { tokens: EMPTY, prompt: `${MARKER} go on`, images: [new Uint8Array(testPng())], nPredict: -1 },
      (_event, taskId) => ctx.cancel(taskId),
    );
    assert.equal(result.done.reason, 'cancelled');
  });

  it('a task with one image completes, with the image tokens counted in the prompt', async () => {
    const text = 'describe the picture:';
    const plain = model.tokenize(text, true, true);
    // cache scopes of their own: nothing of the earlier tasks' prompts (the same image) is reused
    const withImage = await runTask(ctx, {
      tokens: EMPTY,
      prompt: `${MARKER}\n${text}`,
      images: [new Uint8Array(testPng())],
      nPredict: 8,
      cacheScope: 'first',
    });
    assert.equal(withImage.done.reason, 'length');
    assert.equal(withImage.tokens.length, 8);
    assert.ok(withImage.done.timings.promptTotal > plain.length, JSON.stringify(withImage.done.timings));
    assert.equal(withImage.done.timings.promptN, withImage.done.timings.promptTotal);
    // deterministic under greedy sampling, and text tasks still run next to it on the same context
    const again = await runTask(ctx, {
      tokens: EMPTY,
      prompt: `${MARKER}\n${text}`,
      images: [new Uint8Array(testPng())],
      nPredict: 8,
      cacheScope: 'again',
    });
    assert.deepEqual(again.tokens, withImage.tokens);
    const textOnly = await runTask(ctx, { tokens: plain, nPredict: 4 });
    assert.equal(textOnly.tokens.length, 4);
  });

  it('bad image bytes, marker mismatch and a context without projector are LLAMA_INVALID_ARGUMENT', async () => {
    const task = { tokens: EMPTY, nPredict: 4, sampling: GREEDY };
    // Preparation (decoding, mtmd tokenization) runs on the context's media thread: its errors are the task's
    // `error` event; submit() still returns the id at once.
    for (const bad of [
      { ...task, prompt: `${MARKER} hi`, images: [new Uint8Array([1, 2, 3, 4])] },
      { ...task, prompt: 'no marker here', images: [new Uint8Array(testPng())] },
      { ...task, prompt: `text then ${MARKER}`, images: [new Uint8Array(testPng())] },
    ]) {
      await assertRejectsCode(runTask(ctx, bad), 'LLAMA_INVALID_ARGUMENT');
    }
    const plainCtx = new binding.Context(model, { nCtx: 64, nThreads: 1 });
    try {
      assertThrowsCode(
        () => plainCtx.submit({ ...task, prompt: `${MARKER} hi`, images: [new Uint8Array(testPng())] }, () => {}),
        'LLAMA_INVALID_ARGUMENT',
      );
    } finally {
      await plainCtx.dispose();
    }
    // the context still works afterwards
    const ok = await runTask(ctx, {
      tokens: EMPTY,
      prompt: `${MARKER} ok`,
      images: [new Uint8Array(testPng())],
      nPredict: 2,
    });
    assert.equal(ok.tokens.length, 2);
  });
});
