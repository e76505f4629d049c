/** FakeBinding's `Context` (test/utils/fake-binding.ts): slots, a FIFO of waiting tasks, scripted events, embeddings. */
import type {
  NativeContext,
  NativeContextParams,
  NativeMemoryEntry,
  NativeContextStats,
  NativeEvent,
  NativeModel,
  NativeStopReason,
  NativeTaskParams,
  NativeTokenLogprob,
} from '../../binding';
import type { FakeBinding } from './fake-binding';
import { nativeError } from './fake-native-script';

/** Prompt length of a task in fake tokens: its tokens, or for a media task one per prompt character plus 4 per image. */
function fakePromptLength(params: NativeTaskParams): number {
  return params.images ? (params.prompt ?? '').length + 4 * params.images.length : params.tokens.length;
}

interface FakeTask {
  id: number;
  params: NativeTaskParams;
  onEvent: (e: NativeEvent) => void;
  timer?: NodeJS.Timeout;
  done: boolean;
  /** Tokens emitted so far (the fake's KV cells: prompt + emitted). */
  emitted?: number;
}

/**
 * Fake logprobs of the i-th token when the task asks for them: logprob -(i+1)/10, bytes = UTF-8 of the piece, and
 * `task.logprobs` alternatives (`alt0`, `alt1`, …) with decreasing logprobs.
 */
function fakeLogprobs(
  task: NativeTaskParams,
  piece: string,
  i: number,
): { bytes?: Uint8Array; logprob?: number; topLogprobs?: NativeTokenLogprob[] } {
  if (task.logprobs === undefined) return {};
  const enc = new TextEncoder();
  return {
    bytes: enc.encode(piece),
    logprob: -(i + 1) / 10,
    topLogprobs: Array.from({ length: task.logprobs }, (_, k) => ({
      token: 2000 + k,
      bytes: enc.encode(`alt${k}`),
      logprob: -(i + 1) / 10 - k,
    })),
  };
}

/** The fake `Context`: `nParallel` slots, a FIFO of waiting tasks, scripted events, cancel and dispose. */
export class FakeContextHandle implements NativeContext {
  private nextId = 1;
  private readonly active = new Map<number, FakeTask>();
  private readonly queue: FakeTask[] = [];
  /** embed() jobs in flight: id → cancel. */
  private readonly embedJobs = new Map<number, () => void>();
  disposed = false;

  constructor(
    private readonly binding: FakeBinding,
    readonly model: NativeModel,
    readonly params: NativeContextParams,
  ) {}

  /** Tokens a slot may hold: nCtx shared by the slots (kvUnified), else nCtx / slots. */
  private get slotContext(): number {
    return this.params.kvUnified ? this.params.nCtx : Math.floor(this.params.nCtx / this.slots);
  }

  private get slots(): number {
    return this.params.nParallel ?? 1;
  }

  /** A CPU build's breakdown: weights and a KV cache of 64 bytes a cell, all in host memory. */
  memory(): NativeMemoryEntry[] {
    if (this.disposed) throw nativeError('LLAMA_DISPOSED', 'context is disposed');
    return [
      { buffer: 'CPU', device: 'CPU', host: true, model: 1_000_000, context: this.params.nCtx * 64, compute: 4096 },
    ];
  }

  /**
   * Embeds on an embedding context: one `binding.embedVector` per input, recorded in `binding.embedCalls`. Takes
   * `binding.embedDelayMs`; `onJobId` gets the id that cancel() accepts (it then rejects with LLAMA_CANCELLED).
   */
  async embed(inputs: Int32Array[], onJobId?: (jobId: number) => void): Promise<Float32Array[]> {
    if (inputs.length > 0 && onJobId) {
      const id = this.nextId++;
      onJobId(id);
      let cancelled = false;
      let wake = () => {};
      this.embedJobs.set(id, () => {
        cancelled = true;
        wake();
      });
      try {
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, this.binding.embedDelayMs);
        });
      } finally {
        this.embedJobs.delete(id);
      }
      if (cancelled) throw nativeError('LLAMA_CANCELLED', 'embedding cancelled');
    } else if (this.binding.embedDelayMs > 0) {
      await new Promise((resolve) => setTimeout(resolve, this.binding.embedDelayMs));
    }
    await Promise.resolve();
    if (this.disposed) throw nativeError('LLAMA_DISPOSED', 'context is disposed');
    if (!this.params.embeddings) throw nativeError('LLAMA_INVALID_ARGUMENT', 'not an embedding context');
    const slotCtx = this.slotContext;
    for (const input of inputs) {
      if (input.length === 0) throw nativeError('LLAMA_INVALID_ARGUMENT', 'empty input');
      if (input.length > slotCtx || input.length > (this.params.nUbatch ?? this.params.nBatch ?? 512)) {
        throw nativeError('LLAMA_EXCEED_CONTEXT', `input of ${input.length} tokens does not fit`);
      }
    }
    this.binding.embedCalls.push(inputs);
    return inputs.map((t) => this.binding.embedVector(t));
  }

  submit(params: NativeTaskParams, onEvent: (event: NativeEvent) => void): number {
    if (this.disposed) throw nativeError('LLAMA_DISPOSED', 'context is disposed');
    if (this.params.embeddings) throw nativeError('LLAMA_INVALID_ARGUMENT', 'embedding context cannot generate');
    const slotCtx = this.slotContext;
    const promptLength = fakePromptLength(params);
    if (promptLength === 0) throw nativeError('LLAMA_INVALID_ARGUMENT', 'empty prompt');
    if (promptLength >= slotCtx) {
      throw nativeError('LLAMA_EXCEED_CONTEXT', `prompt of ${promptLength} tokens does not fit ${slotCtx}`);
    }
    this.binding.submitted.push(params);
    const task: FakeTask = { id: this.nextId++, params, onEvent, done: false };
    this.queue.push(task);
    setImmediate(() => this.pump());
    return task.id;
  }

  private pump(): void {
    while (this.active.size < this.slots && this.queue.length > 0) {
      const task = this.queue.shift()!;
      if (task.done) continue;
      this.active.set(task.id, task);
      this.run(task);
    }
  }

  private run(task: FakeTask): void {
    const script = this.binding.script(task.params);
    const limit = task.params.nPredict >= 0 ? task.params.nPredict : Infinity;
    let i = 0;
    const step = () => {
      if (task.done) return;
      if (i < script.pieces.length && i < limit) {
        task.emitted = i + 1;
        task.onEvent({
          type: 'token',
          taskId: task.id,
          text: script.pieces[i],
          token: 1000 + i,
          ...fakeLogprobs(task.params, script.pieces[i], i),
        });
        i++;
        task.timer = setTimeout(step, script.delayMs ?? 0);
        return;
      }
      if (script.error && i >= script.pieces.length) {
        this.finish(task, { type: 'error', taskId: task.id, ...script.error });
        return;
      }
      const reason: NativeStopReason = i >= limit && i < script.pieces.length ? 'length' : (script.reason ?? 'eog');
      this.finish(task, {
        type: 'done',
        taskId: task.id,
        reason,
        ...(reason !== 'length' && script.stopString !== undefined ? { stopString: script.stopString } : {}),
        timings: {
          promptN: fakePromptLength(task.params),
          promptTotal: fakePromptLength(task.params),
          promptNs: 1_000_000,
          predictedN: i,
          predictedNs: 2_000_000 * i,
        },
      });
    };
    task.timer = setTimeout(step, script.delayMs ?? 0);
  }

  private finish(task: FakeTask, event: NativeEvent): void {
    if (task.done) return;
    task.done = true;
    if (task.timer) clearTimeout(task.timer);
    this.active.delete(task.id);
    task.onEvent(event);
    setImmediate(() => this.pump());
  }

  cancel(taskId: number): void {
    this.binding.cancelled.push(taskId);
    const embedJob = this.embedJobs.get(taskId);
    if (embedJob) {
      embedJob();
      return;
    }
    const task = this.active.get(taskId) ?? this.queue.find((t) => t.id === taskId);
    if (!task || task.done) return;
    const end = () =>
      this.finish(task, {
        type: 'done',
        taskId,
        reason: 'cancelled',
        timings: { promptN: 0, promptTotal: 0, promptNs: 0, predictedN: 0, predictedNs: 0 },
      });
    if (this.binding.cancelDelayMs > 0) setTimeout(end, this.binding.cancelDelayMs);
    else setImmediate(end);
  }

  /** Threads set by setThreads (the last call), else params.nThreads, else 0. */
  threads = 0;

  setThreads(nThreads: number): void {
    if (this.disposed) throw Object.assign(new Error('context is disposed'), { code: 'LLAMA_DISPOSED' });
    this.threads = nThreads;
  }

  stats(): NativeContextStats {
    return {
      nCtx: this.params.nCtx,
      nCtxSlot: this.slotContext,
      nParallel: this.slots,
      activeSlots: this.active.size,
      queuedTasks: this.queue.filter((t) => !t.done).length,
      embedJobs: this.embedJobs.size,
      decodeSteps: 0,
      graphsReused: 0,
      kvSize: 0,
      kvUnified: this.params.kvUnified ?? false,
      flashAttn: this.params.flashAttn ?? 'auto',
      kvCellsUsed: [...this.active.values()].reduce((sum, t) => sum + fakePromptLength(t.params) + (t.emitted ?? 0), 0),
      kvCellsCached: 0,
      pausedSlots: 0,
      ramCacheEntries: 0,
      ramCacheBytes: 0,
      ramCacheHits: 0,
      ramCacheTokens: 0,
      nThreads: this.threads || (this.params.nThreads ?? 0),
      draftTokens: 0,
      draftAccepted: 0,
    };
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    for (const task of [...this.active.values(), ...this.queue]) {
      this.finish(task, {
        type: 'done',
        taskId: task.id,
        reason: 'cancelled',
        timings: { promptN: 0, promptTotal: 0, promptNs: 0, predictedN: 0, predictedNs: 0 },
      });
    }
    await Promise.resolve();
  }
}
