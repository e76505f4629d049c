// Shared helpers of the native tier: the raw addon, sampling presets and a promise wrapper around submit().
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import type {
  NativeBinding,
  NativeContext,
  NativeContextParams,
  NativeEvent,
  NativeModel,
  NativeModelParams,
  NativeSamplingParams,
  NativeTaskParams,
} from '../../binding';
import { findAddonPath, loadBinding } from '../../src/native/load-binding';
import { GREEDY } from '../utils/sampling';

export const binding: NativeBinding = loadBinding();

/**
 * Whether the loaded addon is a GPU build (build/cuda|vulkan|metal): its kernels round differently with the batch
 * shape, so results computed in different batches agree to about 1e-3 instead of CPU's 1e-4.
 */
export const GPU_ADDON = /[/\\](cuda|vulkan|metal)[/\\]/.test(findAddonPath() ?? '');

/** Tolerance for embeddings computed in different batches (absolute, per component). */
export const BATCH_TOLERANCE = GPU_ADDON ? 1e-3 : 1e-4;

export { GREEDY };

/** Seeded random sampling through the whole chain. */
export function seeded(seed: number, temperature = 0.9): NativeSamplingParams {
  return { ...GREEDY, temperature, topK: 100, topP: 0.95, minP: 0.01, typicalP: 1, repeatPenalty: 1.1, seed };
}

export type TokenEvent = Extract<NativeEvent, { type: 'token' }>;
export type DoneEvent = Extract<NativeEvent, { type: 'done' }>;
export type ErrorEvent = Extract<NativeEvent, { type: 'error' }>;

export interface TaskResult {
  taskId: number;
  events: NativeEvent[];
  tokenEvents: TokenEvent[];
  tokens: number[];
  text: string;
  done: DoneEvent;
}

/**
 * Submits a task and resolves with all its events once `done` arrives (rejects on an `error` event).
 * `onToken` runs for every token event (e.g. to cancel).
 */
export function runTask(
  ctx: NativeContext,
  task: Partial<NativeTaskParams> & { tokens: Int32Array },
  onToken?: (event: TokenEvent, taskId: number) => void,
): Promise<TaskResult> {
  return new Promise((resolve, reject) => {
    const events: NativeEvent[] = [];
    let taskId = -1;
    let finished = false;
    taskId = ctx.submit({ nPredict: 16, sampling: GREEDY, ...task }, (event) => {
      assert.equal(finished, false, 'no event may follow done/error');
      assert.equal(event.taskId, taskId);
      events.push(event);
      if (event.type === 'token') {
        onToken?.(event, taskId);
        return;
      }
      finished = true;
      if (event.type === 'error') {
        reject(Object.assign(new Error(event.message), { code: event.code }));
        return;
      }
      const tokenEvents = events.filter((e): e is TokenEvent => e.type === 'token');
      resolve({
        taskId,
        events,
        tokenEvents,
        tokens: tokenEvents.map((e) => e.token),
        text: tokenEvents.map((e) => e.text).join(''),
        done: event,
      });
    });
  });
}

export async function loadModel(path: string, params?: NativeModelParams): Promise<NativeModel> {
  const model = new binding.Model(path, params);
  await model.load();
  return model;
}

/** Asserts that `fn` throws an Error whose `code` is `code`. */
export function assertThrowsCode(fn: () => unknown, code: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.equal((err as { code?: string }).code, code, String(err));
    return true;
  });
}

/** Asserts that `promise` rejects with an Error whose `code` is `code`. */
export async function assertRejectsCode(promise: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof Error, 'rejects with an Error');
    assert.equal((err as { code?: string }).code, code, String(err));
    return true;
  });
}

/** True when the string has no unpaired UTF-16 surrogate, i.e. it round-trips through UTF-8 unchanged. */
export function isWellFormed(text: string): boolean {
  return Buffer.from(text, 'utf8').toString('utf8') === text;
}

/** `n` pseudo-random token ids of `model`'s vocabulary (BOS, id 1, first when `bos`), the same for the same `seed`. */
export function tokensOf(model: NativeModel, seed: number, n: number, bos = true): number[] {
  let x = seed * 2654435761 + 1;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out.push(bos && i === 0 ? 1 : 3 + (x % (model.info().nVocab - 3)));
  }
  return out;
}

/** The tokens a slot holds after a task: its prompt and every sampled token but the last (never decoded). */
export function heldAfter(prompt: number[], generated: number[]): number[] {
  return [...prompt, ...generated.slice(0, -1)];
}

/**
 * For a describe block: the model at `path`, loaded in its `before` hook, and `open(params)`, which makes a context on
 * it (1 thread, at most 2) that its `after` hook disposes with the model. `model` is readable from the tests on.
 */
export function useModelContexts(path: string): {
  readonly model: NativeModel;
  open(params: NativeContextParams): NativeContext;
} {
  let model: NativeModel | undefined;
  const contexts: NativeContext[] = [];
  before(async () => {
    model = await loadModel(path);
  });
  after(async () => {
    for (const ctx of contexts) await ctx.dispose();
    await model?.dispose();
  });
  const loaded = (): NativeModel => {
    if (!model) throw new Error(`${path} is not loaded yet (use the model from the tests on)`);
    return model;
  };
  return {
    get model(): NativeModel {
      return loaded();
    },
    open: (params: NativeContextParams): NativeContext => {
      const ctx = new binding.Context(loaded(), { nThreads: 1, nThreadsMax: 2, ...params });
      contexts.push(ctx);
      return ctx;
    },
  };
}
