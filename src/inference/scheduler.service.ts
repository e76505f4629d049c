import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Observable, Subscription } from 'rxjs';
import { ServerBusyError } from '../common/errors';
import { DaemonConfig } from '../config';
import { Runner, RUNNER_FACTORY, RunnerFactory, RunnerSpec } from './runner/runner';

/** setTimeout's longest delay (2^31 - 1 ms, about 24.8 days); longer keep-alives re-arm in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A loaded runner and its bookkeeping (Ollama `runnerRef`, reference/ollama-api.md §7.1). */
interface LoadedRunner {
  key: string;
  runner: Runner;
  /** In-flight requests holding this runner. */
  refCount: number;
  /** How long to stay loaded once idle, ms (Infinity = forever, 0 = unload when idle). */
  keepAliveMs: number;
  timer?: NodeJS.Timeout;
  /** When the idle timer fires (undefined while in use or forever). */
  expiresAt?: Date;
  /** Set when the runner must go as soon as it is idle (reload with other options, keep_alive 0). */
  expired: boolean;
}

/** A runner held for one request. Call `release()` exactly once when the request is over. */
export interface RunnerLease {
  runner: Runner;
  /** Time spent waiting for the scheduler and the load, ns (Ollama's load_duration). */
  loadDurationNs: number;
  release(): void;
}

/** What to acquire. */
export interface AcquireRequest {
  spec: RunnerSpec;
  /** The request's keep_alive in ms (Infinity = forever), or undefined to keep the runner's current value. */
  keepAliveMs?: number;
}

/**
 * Keeps loaded runners and decides when to load and unload them — the small core of Ollama's scheduler
 * (`server/sched.go`, reference/ollama-api.md §7):
 * - runners are keyed by the weights' blob path; a request whose load options differ from the loaded runner's
 *   forces a reload (the old runner is drained, then closed);
 * - loads run one at a time (a FIFO of pending loads, bounded by OLLAMA_MAX_QUEUE → ServerBusyError);
 *   requests for an already loaded, compatible runner bypass the queue;
 * - in-flight requests are reference-counted; when the count drops to 0 the keep-alive timer starts
 *   (request keep_alive, else the runner's current value, else OLLAMA_KEEP_ALIVE); 0 unloads at once, forever never;
 * - on shutdown every runner is closed.
 * Not yet (later issue): OLLAMA_MAX_LOADED_MODELS, memory-based eviction, GPU placement; `loaded()` is the hook for
 * /api/ps.
 */
@Injectable()
export class SchedulerService implements OnApplicationShutdown {
  private readonly logger = new Logger(SchedulerService.name);
  private readonly runners = new Map<string, LoadedRunner>();
  /** Close promises of runners being unloaded, by key: a new load of the same weights waits for them. */
  private readonly closing = new Map<string, Promise<void>>();
  /** Tail of the load queue: loads run one at a time. */
  private loadChain: Promise<unknown> = Promise.resolve();
  private pendingLoads = 0;
  private shuttingDown = false;

  constructor(
    private readonly config: DaemonConfig,
    @Inject(RUNNER_FACTORY) private readonly factory: RunnerFactory,
  ) {}

  /**
   * Gets a runner for `spec`, loading it (or reloading with new options) when needed.
   * @throws ServerBusyError when OLLAMA_MAX_QUEUE loads are already pending; the factory's load errors.
   */
  async acquire(request: AcquireRequest): Promise<RunnerLease> {
    const started = process.hrtime.bigint();
    const key = request.spec.modelPath;
    let entry = this.compatible(key, request.spec);
    if (!entry) {
      if (this.pendingLoads >= this.config.maxQueue) throw new ServerBusyError();
      this.pendingLoads++;
      const load = this.loadChain.then(() => this.loadOrReuse(key, request.spec));
      this.loadChain = load.catch(() => undefined);
      try {
        entry = await load;
      } finally {
        this.pendingLoads--;
      }
    } else {
      entry.refCount++;
    }
    this.hold(entry, request.keepAliveMs);
    const held = entry;
    let released = false;
    return {
      runner: entry.runner,
      loadDurationNs: Number(process.hrtime.bigint() - started),
      release: () => {
        if (released) return;
        released = true;
        this.release(held);
      },
    };
  }

  /**
   * Runs `work` with a runner held for exactly as long as its Observable is subscribed (ARCHITECTURE.md §5 step 2):
   * acquires on subscribe, releases on complete, error or unsubscribe. An unsubscribe during the load releases the
   * runner once it is loaded.
   */
  withRunner<T>(request: AcquireRequest, work: (lease: RunnerLease) => Observable<T>): Observable<T> {
    return new Observable<T>((subscriber) => {
      let lease: RunnerLease | undefined;
      let inner: Subscription | undefined;
      let unsubscribed = false;
      this.acquire(request).then(
        (acquired) => {
          if (unsubscribed) {
            acquired.release();
            return;
          }
          lease = acquired;
          try {
            inner = work(acquired).subscribe({
              next: (v) => subscriber.next(v),
              error: (err: unknown) => {
                acquired.release();
                subscriber.error(err);
              },
              complete: () => {
                acquired.release();
                subscriber.complete();
              },
            });
          } catch (err) {
            acquired.release();
            subscriber.error(err);
          }
        },
        (err: unknown) => subscriber.error(err),
      );
      return () => {
        unsubscribed = true;
        inner?.unsubscribe();
        lease?.release();
      };
    });
  }

  /**
   * Unloads the runner of these weights as soon as it is idle (keep_alive 0 with an empty prompt, §3.2 step 4).
   * No-op when it is not loaded.
   */
  expire(modelPath: string): void {
    const entry = this.runners.get(modelPath);
    if (!entry) return;
    entry.keepAliveMs = 0;
    entry.expired = true;
    if (entry.refCount === 0) this.unload(entry);
  }

  /** Loaded runners (for /api/ps later): key, spec, refCount, expiry. */
  loaded(): Array<{ spec: RunnerSpec; refCount: number; expiresAt?: Date; keepAliveMs: number }> {
    return [...this.runners.values()].map((e) => ({
      spec: e.runner.spec,
      refCount: e.refCount,
      expiresAt: e.expiresAt,
      keepAliveMs: e.keepAliveMs,
    }));
  }

  /** Closes every runner (SIGINT/SIGTERM or app.close()). */
  async onApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    const entries = [...this.runners.values()];
    for (const entry of entries) this.unload(entry);
    await Promise.allSettled([...this.closing.values()]);
  }

  private compatible(key: string, spec: RunnerSpec): LoadedRunner | undefined {
    const entry = this.runners.get(key);
    if (entry && !entry.expired && sameSpec(entry.runner.spec, spec)) return entry;
    return undefined;
  }

  /** Runs inside the load queue: reuse what a previous queued load produced, else (re)load. */
  private async loadOrReuse(key: string, spec: RunnerSpec): Promise<LoadedRunner> {
    const existing = this.runners.get(key);
    if (existing && !existing.expired && sameSpec(existing.runner.spec, spec)) {
      existing.refCount++;
      return existing;
    }
    if (existing) {
      // Reload with different load options (§7.2 needsReload): drain the old runner, then close it.
      this.logger.log(`reloading ${key}: load options changed`);
      existing.expired = true;
      existing.keepAliveMs = 0;
      if (existing.refCount === 0) this.unload(existing);
      await this.waitUntilGone(existing);
    }
    const pendingClose = this.closing.get(key);
    if (pendingClose) await pendingClose;
    const runner = await this.factory.create(spec);
    if (this.shuttingDown) {
      await runner.close();
      throw new ServerBusyError('server is shutting down');
    }
    const entry: LoadedRunner = {
      key,
      runner,
      refCount: 1,
      keepAliveMs: this.config.keepAliveMs,
      expired: false,
    };
    this.runners.set(key, entry);
    return entry;
  }

  /** Resolves once `entry` has been unloaded and closed. */
  private waitUntilGone(entry: LoadedRunner): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.runners.get(entry.key) !== entry) {
          void (this.closing.get(entry.key) ?? Promise.resolve()).then(() => resolve());
          return;
        }
        setTimeout(check, 10);
      };
      check();
    });
  }

  /** Marks a runner in use: stops its idle timer and applies the request's keep_alive. */
  private hold(entry: LoadedRunner, keepAliveMs: number | undefined): void {
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.expiresAt = undefined;
    if (keepAliveMs !== undefined) entry.keepAliveMs = keepAliveMs;
  }

  private release(entry: LoadedRunner): void {
    entry.refCount = Math.max(0, entry.refCount - 1);
    if (entry.refCount > 0 || this.runners.get(entry.key) !== entry) return;
    if (entry.expired || entry.keepAliveMs <= 0) {
      this.unload(entry);
      return;
    }
    if (entry.keepAliveMs === Infinity) return;
    entry.expiresAt = new Date(Date.now() + entry.keepAliveMs);
    this.armTimer(entry);
  }

  private armTimer(entry: LoadedRunner): void {
    const remaining = (entry.expiresAt?.getTime() ?? 0) - Date.now();
    entry.timer = setTimeout(
      () => {
        entry.timer = undefined;
        if (entry.refCount > 0) return;
        if ((entry.expiresAt?.getTime() ?? 0) > Date.now()) this.armTimer(entry);
        else this.unload(entry);
      },
      Math.max(0, Math.min(remaining, MAX_TIMER_MS)),
    );
    entry.timer.unref();
  }

  private unload(entry: LoadedRunner): void {
    if (this.runners.get(entry.key) !== entry) return;
    if (entry.timer) clearTimeout(entry.timer);
    this.runners.delete(entry.key);
    this.logger.log(`unloading ${entry.key}`);
    const closing = entry.runner
      .close()
      .catch((err: unknown) => this.logger.error(`closing ${entry.key} failed: ${(err as Error).message}`))
      .finally(() => {
        if (this.closing.get(entry.key) === closing) this.closing.delete(entry.key);
      });
    this.closing.set(entry.key, closing);
  }
}

/** Whether a loaded runner can serve a request (Ollama's needsReload, negated). */
export function sameSpec(a: RunnerSpec, b: RunnerSpec): boolean {
  return (
    a.modelPath === b.modelPath &&
    a.numCtx === b.numCtx &&
    a.numParallel === b.numParallel &&
    a.numBatch === b.numBatch &&
    a.numThread === b.numThread &&
    (a.numGpu === b.numGpu || a.numGpu < 0 || b.numGpu < 0) &&
    a.mainGpu === b.mainGpu &&
    a.useMmap === b.useMmap
  );
}
