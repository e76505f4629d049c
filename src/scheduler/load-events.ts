import type { ModelEvents, UnloadReason } from '../observability/model-events';
import type { RunnerSpec } from '../runner';

/** A model still loading, as /api/ps lists it (beyond Ollama). */
export interface LoadingRunnerInfo {
  spec: RunnerSpec;
  /** The model name the load is for (the weights path when none was given). */
  name: string;
  /** Load progress in [0, 1] so far (llama.cpp's load progress callback; 0 until it reports). */
  progress: number;
  /** The memory estimate the load reserved, bytes. */
  sizeBytes: number;
  /** The keep-alive the runner will start with, ms (Infinity = forever). */
  keepAliveMs: number;
}

/** Smallest step between two `load.progress` events (the runner process reports at most once per 1 % too). */
const PROGRESS_STEP = 0.01;

/**
 * The scheduler's side of the model events (issue 36; docs/observability.md "Model events"): wraps each runner load in
 * `load.start` → `load.progress`… → `load.ready` (with its duration, ns) or `load.failed` (with the error's message,
 * what a request waiting for the load gets), publishes `unload` with its reason, and keeps the loads in flight for
 * /api/ps. Progress events are monotone (a retried load that starts again from 0 reports nothing until it passes the
 * last value), at most one per 1 %, and the last one is 1 when the runner reported completion. Without a bus only the
 * loads in flight are tracked.
 */
export class LoadEvents {
  private readonly inFlight = new Set<LoadingRunnerInfo>();

  constructor(private readonly events?: ModelEvents) {}

  /**
   * Runs `load` (the runner factory's create, given the progress callback) under the load events, listed by
   * {@link loading} until it settles.
   * @returns what `load` resolves to; rejects with its error (after `load.failed`).
   */
  async track<T>(
    info: Omit<LoadingRunnerInfo, 'progress'>,
    load: (onProgress: (progress: number) => void) => Promise<T>,
  ): Promise<T> {
    const loading: LoadingRunnerInfo = { ...info, progress: 0 };
    const model = info.name;
    this.inFlight.add(loading);
    const started = process.hrtime.bigint();
    let sent = 0;
    this.events?.publish({ type: 'load.start', model });
    const onProgress = (value: number) => {
      const progress = Math.min(1, Math.max(0, value));
      if (progress <= loading.progress) return;
      loading.progress = progress;
      if (progress - sent < PROGRESS_STEP && progress < 1) return;
      sent = progress;
      this.events?.publish({ type: 'load.progress', model, data: { progress } });
    };
    try {
      const runner = await load(onProgress);
      const durationNs = Number(process.hrtime.bigint() - started);
      this.events?.publish({ type: 'load.ready', model, data: { duration_ns: durationNs } });
      return runner;
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      this.events?.publish({ type: 'load.failed', model, data: { error } });
      throw err;
    } finally {
      this.inFlight.delete(loading);
    }
  }

  /** A runner of `model` left memory for `reason`. */
  unloaded(model: string, reason: UnloadReason): void {
    this.events?.publish({ type: 'unload', model, data: { reason } });
  }

  /** The loads in flight, oldest first (copies). */
  loading(): LoadingRunnerInfo[] {
    return [...this.inFlight].map((l) => ({ ...l }));
  }
}
