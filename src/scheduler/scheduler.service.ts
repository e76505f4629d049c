import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import { Observable, Subject, Subscription } from 'rxjs';
import { RequestCancelledError, RunnerTerminatedError, ServerBusyError } from '../common/errors';
import { DaemonConfig } from '../config';
import { ModelLifecycleService } from '../models';
import { FairGate, slotGatePermits } from './fair-queue';
import { LoadCapacity } from './load-capacity';
import { LoadEvents, LoadingRunnerInfo } from './load-events';
import { LoadedRunner, loadedRunnerInfo } from './loaded-runner';
import { LoadQueue } from './load-queue';
import { MEMORY_PROBE, MemoryProbe, SystemMemoryProbe } from './memory.estimator';
import { RamCacheBudget } from './ram-cache-budget';
import { RpcEndpoints } from './rpc-endpoints';
import { Runner, RunnerDeath, RUNNER_FACTORY, RunnerFactory, RunnerSpec } from '../runner';
import { MODEL_EVENTS, ModelEvents, UnloadReason } from '../observability/model-events';

import {
  AcquireRequest,
  LoadedRunnerInfo,
  MEMORY_FIT_RATIO,
  MemoryFit,
  RunnerLease,
  RunnerLifecycleEvent,
  sameSpec,
  SchedulerStats,
} from './scheduler.types';
import { schedulerStats } from './scheduler.stats';
import { ThreadBalancer } from './thread-split';

export * from './scheduler.types';

/** setTimeout's longest delay (2^31 - 1 ms, about 24.8 days); longer keep-alives re-arm in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Keeps loaded runners and decides when to load and unload them — Ollama's scheduler (`server/sched.go`,
 * reference/ollama-api.md §7):
 * - runners are keyed by the weights' blob path; a request whose load options differ (`sameSpec`) forces a reload:
 *   the old runner is marked expired, drained, closed, then the new one loads;
 * - requests for a loaded, compatible runner bypass the queue (refCount + 1, idle timer stopped);
 * - every other request waits in the pending queue (load-queue.ts): one line per model, one load at a time per model
 *   (concurrent requests for a model coalesce on one load; a failed load fails the requests waiting for the same
 *   load), while loads of different models run in parallel, so a slow or stuck load (bounded by OLLAMA_LOAD_TIMEOUT in
 *   the runner factory) delays only its own model. When OLLAMA_MAX_QUEUE requests are already pending (waiting or
 *   loading) a new one fails at once with ServerBusyError (503 `server busy, please try again.  maximum pending
 *   requests exceeded`);
 * - before a load (load-capacity.ts): while OLLAMA_MAX_LOADED_MODELS (0 → 3) runners are resident or loading, or
 *   while the new runner's estimate exceeds 80 % of the free memory (system free memory less the reservations of the
 *   loads in flight, capped by total − the estimates of loaded, loading and closing runners), a victim is evicted:
 *   the idle runner with the shortest keep-alive (forever last), then by path; if none is idle, the first in that
 *   order is expired and its in-flight requests are awaited; with nothing loaded to evict, the load waits for a load in
 *   flight to end. A load reserves its estimate before its runner starts. The first model always loads;
 * - RPC workers (rpc-endpoints.ts): a runner holds its RunnerSpec.rpcServers from its load until it is gone; a load
 *   that needs a worker held by another runner evicts that runner first, as above (idle: now; busy: expired, then its
 *   requests are awaited), or waits for a load in flight or a runner closing that holds it;
 * - keep-alive (§4.2): a request's keep_alive overwrites the runner's; none keeps it; a new load starts with
 *   OLLAMA_KEEP_ALIVE. When the reference count drops to 0: 0 unloads now, Infinity never, otherwise a timer fires
 *   after that long;
 * - a request whose caller aborts while waiting stops waiting (RequestCancelledError, 499); a load already started
 *   completes and the runner idles under its keep-alive; nothing leaks;
 * - a deleted model's runner is unloaded once idle (§3.12): the scheduler follows ModelLifecycleService.deleted$;
 * - on shutdown pending requests fail and every runner is closed.
 * All state is touched on the main thread only (no locks).
 */
@Injectable()
export class SchedulerService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(SchedulerService.name);
  private readonly runners = new Map<string, LoadedRunner>();
  /** Requests waiting for a load (load-queue.ts), one load at a time per model. */
  private readonly queue: LoadQueue<LoadedRunner>;
  /** Resident and loading models, and their memory (load-capacity.ts). */
  private readonly capacity: LoadCapacity<LoadedRunner>;
  /** The RPC workers each loading, loaded or closing runner holds (rpc-endpoints.ts). */
  private readonly rpc = new RpcEndpoints<LoadedRunner>();
  private shuttingDown = false;
  /** Ends each request running through {@link withRunner} now (see {@link abortAll}). */
  private readonly inFlight = new Set<(err: unknown) => void>();
  private readonly memory: MemoryProbe;
  /** Weights whose last runner died: their next load counts as a restart. */
  private readonly crashed = new Set<string>();
  private readonly runnerEvents = new Subject<RunnerLifecycleEvent>();
  /** Runner starts and deaths, for the metrics (llamad_runner_starts_total, …_crashes_total, …_restarts_total). */
  readonly runnerEvents$: Observable<RunnerLifecycleEvent> = this.runnerEvents.asObservable();
  /** The subscription to model deletions (see onModuleInit). */
  private deletions?: Subscription;
  /** Splits the cores between the runners decoding at the same time (thread-split.ts). */
  private readonly threads = new ThreadBalancer();
  private readonly ramCache = new RamCacheBudget(this.config.cacheRamMiB * 2 ** 20);
  /** Load and unload events (GET /api/events) and the loads in flight (/api/ps). */
  private readonly loads: LoadEvents;

  constructor(
    private readonly config: DaemonConfig,
    @Inject(RUNNER_FACTORY) private readonly factory: RunnerFactory,
    @Optional() @Inject(MEMORY_PROBE) memory?: MemoryProbe,
    @Optional() private readonly lifecycle?: ModelLifecycleService,
    @Optional() @Inject(MODEL_EVENTS) events?: ModelEvents,
  ) {
    this.loads = new LoadEvents(events);
    this.memory = memory ?? new SystemMemoryProbe();
    this.capacity = new LoadCapacity(this.runners, this.memory, () => this.config.maxLoadedModels);
    this.queue = new LoadQueue<LoadedRunner>(
      {
        load: (r) => this.loadFor(r.spec, r.acceptLargerContext, r.modelName),
        // loadFor took the request's reference already (so that no other load evicts the runner before this).
        deliver: (entry, r) => this.hold(entry, r.keepAliveMs),
        // Nobody waits any more: the runner stays loaded and idles under its keep-alive.
        abandon: (entry, r) => {
          this.hold(entry, r.keepAliveMs);
          entry.refCount = Math.max(0, entry.refCount - 1);
          this.afterIdle(entry);
        },
        sameLoad: (failed, waiting) => sameSpec(failed.spec, waiting.spec) && sameSpec(waiting.spec, failed.spec),
      },
      () => this.config.maxQueue,
    );
  }

  /**
   * Follows model deletions: the runner of a deleted model's weights is unloaded as soon as it is idle (§3.12, like
   * Ollama's delete handler expiring the runner). Without a ModelLifecycleService (hand-wired tests) nothing is
   * followed.
   */
  onModuleInit(): void {
    this.deletions ??= this.lifecycle?.deleted$.subscribe((deleted) => {
      this.logger.log(`unloading deleted model ${deleted.name}`);
      this.expire(deleted.modelPath);
    });
  }

  /**
   * Gets a runner for `spec`, loading it (or reloading with new options) when needed.
   * @param signal aborting it while the request waits rejects with RequestCancelledError.
   * @throws ServerBusyError when OLLAMA_MAX_QUEUE requests are already pending or the server is shutting down;
   *   RequestCancelledError on abort; the factory's load errors (ModelLoadError, InsufficientMemoryError).
   */
  async acquire(request: AcquireRequest, signal?: AbortSignal): Promise<RunnerLease> {
    const started = process.hrtime.bigint();
    if (signal?.aborted) throw new RequestCancelledError();
    if (this.shuttingDown) throw new ServerBusyError('server is shutting down');
    let entry = this.compatible(request.spec, request.acceptLargerContext);
    if (entry) {
      entry.refCount++;
      this.hold(entry, request.keepAliveMs);
    } else {
      entry = await this.queue.enqueue(request, signal);
    }
    if (request.modelName && request.namesRunner !== false) entry.name = request.modelName;
    this.threads.rebalance(this.runners.values());
    return this.lease(entry, started);
  }

  private lease(entry: LoadedRunner, started: bigint): RunnerLease {
    let released = false;
    return {
      runner: entry.runner,
      slots: entry.gate,
      loadDurationNs: Math.max(1, Number(process.hrtime.bigint() - started)),
      loadWindow: entry.loadWindow,
      release: () => {
        if (released) return;
        released = true;
        this.release(entry);
      },
    };
  }

  /**
   * Finds or loads a runner for `spec` and takes a reference on it for the request (in the same turn as it is found or
   * added, so that a parallel load never sees it idle before the requester has it): reload, capacity and memory
   * checks first.
   */
  private async loadFor(spec: RunnerSpec, acceptLargerContext = false, modelName?: string): Promise<LoadedRunner> {
    const key = spec.modelPath;
    const existing = this.runners.get(key);
    if (existing && !existing.expired && sameSpec(existing.runner.spec, spec, acceptLargerContext)) {
      existing.refCount++;
      return existing;
    }
    if (existing) {
      // §7.2 needsReload (or already expiring): drain and close the old runner first.
      this.logger.log(`reloading ${key}: load options changed`);
      this.expireEntry(existing, 'evicted');
      await existing.gone;
    }
    const check = () => {
      if (this.shuttingDown) throw new ServerBusyError('server is shutting down');
    };
    const evict = async (victim: LoadedRunner, reason: string) => {
      this.logger.log(`evicting ${victim.key}: ${reason}`);
      this.expireEntry(victim, 'evicted');
      await victim.gone;
    };
    check();
    const rpc = await this.rpc.claim(key, spec.rpcServers ?? [], evict, check);
    let release: (() => void) | undefined;
    try {
      const needed = await this.memory.estimate(spec);
      release = await this.capacity.makeRoom(needed, evict, check);
      const entry = await this.start(spec, key, modelName ?? key, needed);
      this.rpc.attach(rpc, entry);
      entry.rpc = rpc;
      return entry;
    } catch (err) {
      rpc.release();
      throw err;
    } finally {
      release?.();
    }
  }

  /** Starts the runner of a load that has room (its estimate reserved) and adds it to the loaded runners. */
  private async start(spec: RunnerSpec, key: string, name: string, needed: number): Promise<LoadedRunner> {
    let runner: Runner;
    const loadStart = performance.now();
    const cache = this.ramCache.reserve(spec); // runner.spec.cacheRamBytes: given back by unload()
    try {
      const threads = this.threads.forLoad(this.runners.values());
      const loading = { spec, name, sizeBytes: needed, keepAliveMs: this.config.keepAliveMs };
      runner = await this.loads.track(loading, (onProgress) =>
        this.factory.create(cache.spec, { modelName: name, threads, onProgress }),
      );
      this.threads.loaded(runner, threads);
    } catch (err) {
      this.ramCache.release(cache.bytes);
      if (err instanceof RunnerTerminatedError && err.death) {
        this.crashed.add(key);
        this.runnerEvents.next({ kind: 'crash', model: name, cause: err.death });
      }
      throw err;
    }
    this.runnerEvents.next({ kind: 'start', model: name, restart: this.crashed.delete(key) });
    if (this.shuttingDown) {
      await runner.close();
      throw new ServerBusyError('server is shutting down');
    }
    let markGone!: () => void;
    const gone = new Promise<void>((r) => (markGone = r));
    const entry: LoadedRunner = {
      key,
      runner,
      refCount: 1, // the loading request's
      keepAliveMs: this.config.keepAliveMs,
      expired: false,
      sizeBytes: needed,
      gone,
      markGone,
      unloading: false,
      name,
      gate: new FairGate(slotGatePermits(runner.spec.numParallel)),
      loadWindow: [loadStart, performance.now()],
    };
    this.runners.set(key, entry);
    runner.onDeath?.((death) => this.onDeath(entry, death));
    return entry;
  }

  /**
   * Runs `work` with a runner held for exactly as long as its Observable is subscribed (ARCHITECTURE.md §5 step 2):
   * acquires on subscribe, releases on complete, error or unsubscribe. An unsubscribe while waiting for the load
   * stops waiting (the request is dropped from the queue; a load in progress finishes and idles).
   */
  withRunner<T>(request: AcquireRequest, work: (lease: RunnerLease) => Observable<T>): Observable<T> {
    return new Observable<T>((subscriber) => {
      let lease: RunnerLease | undefined;
      let inner: Subscription | undefined;
      const abort = new AbortController();
      const end = (err: unknown) => {
        this.inFlight.delete(end);
        abort.abort();
        inner?.unsubscribe();
        lease?.release();
        subscriber.error(err);
      };
      this.inFlight.add(end);
      this.acquire(request, abort.signal).then(
        (acquired) => {
          if (abort.signal.aborted) {
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
        (err: unknown) => {
          if (!abort.signal.aborted) subscriber.error(err);
        },
      );
      return () => {
        this.inFlight.delete(end);
        abort.abort();
        inner?.unsubscribe();
        lease?.release();
      };
    });
  }

  /**
   * Ends every request running through {@link withRunner} at once with `err` (graceful shutdown after its timeout):
   * generations are cancelled (their slots freed), waiting requests stop waiting, and each caller's Observable errors
   * — so a stream ends with its dialect's final error frame. Requests that start afterwards are not affected.
   * @returns how many requests were ended.
   */
  abortAll(err: unknown): number {
    const ends = [...this.inFlight];
    for (const end of ends) end(err);
    return ends.length;
  }

  /** Requests running through {@link withRunner} now (waiting for a load or a slot, or generating). */
  inFlightCount(): number {
    return this.inFlight.size;
  }

  /**
   * The load of the scheduler and of every loaded runner right now (for the metrics gauges, read at scrape time).
   * Slots and KV cells come from the runner's `usage()`; a runner without it counts its requests as busy slots.
   */
  stats(): SchedulerStats {
    return schedulerStats(this.queue.pendingByModel(), this.runners.values());
  }

  /**
   * Unloads the runner of these weights as soon as it is idle (Ollama's expireRunner: keep_alive 0 with an empty
   * prompt, §3.2 step 4; model deletion). Requests arriving meanwhile load a fresh runner. No-op when not loaded.
   */
  expire(modelPath: string): void {
    const entry = this.runners.get(modelPath);
    if (entry) this.expireEntry(entry, 'requested');
  }

  /** Loaded runners (for /api/ps), in no particular order. */
  loaded(): LoadedRunnerInfo[] {
    return loadedRunnerInfo(this.runners.values());
  }

  /** Models still loading (for /api/ps: beyond Ollama), oldest first. */
  loading(): LoadingRunnerInfo[] {
    return this.loads.loading();
  }

  /**
   * Runs `work` with the runner already loaded for these weights (whatever its load options), held meanwhile so that
   * it is not unloaded under it (like a request: the idle timer restarts when it ends). No queue, no load, no slot.
   * @returns `{ value }`, or undefined (and `work` is not called) when no usable runner of these weights is loaded.
   */
  async withLoaded<T>(modelPath: string, work: (runner: Runner) => Promise<T>): Promise<{ value: T } | undefined> {
    const entry = this.runners.get(modelPath);
    if (!entry || entry.expired || entry.unloading || this.shuttingDown) return undefined;
    entry.refCount++;
    this.hold(entry, undefined);
    try {
      return { value: await work(entry.runner) };
    } finally {
      this.release(entry);
    }
  }

  /** Requests waiting for a load, including the one loading now. */
  pendingCount(): number {
    return this.queue.pendingCount();
  }

  /** Closes every runner and fails waiting requests (SIGINT/SIGTERM or app.close()). */
  async onApplicationShutdown(): Promise<void> {
    this.deletions?.unsubscribe();
    this.shuttingDown = true;
    this.queue.rejectAll(new ServerBusyError('server is shutting down'));
    const entries = [...this.runners.values()];
    for (const entry of entries) this.unload(entry, 'shutdown');
    await Promise.allSettled(entries.map((e) => e.gone));
  }

  private compatible(spec: RunnerSpec, acceptLargerContext = false): LoadedRunner | undefined {
    const entry = this.runners.get(spec.modelPath);
    if (entry && !entry.expired && sameSpec(entry.runner.spec, spec, acceptLargerContext)) return entry;
    return undefined;
  }

  /**
   * Whether a runner for `spec` would fit in memory (the estimate against MEMORY_FIT_RATIO of what is free, counting
   * the bytes of the runner it would replace — the same model loaded with other options). Used before growing a
   * context for a long prompt; does not load or evict anything.
   */
  async memoryFit(spec: RunnerSpec): Promise<MemoryFit> {
    const neededBytes = await this.memory.estimate(spec);
    const replaced = this.runners.get(spec.modelPath)?.sizeBytes ?? 0;
    const availableBytes = this.capacity.freeBytes() + replaced;
    return { fits: neededBytes <= MEMORY_FIT_RATIO * availableBytes, neededBytes, availableBytes };
  }

  /** Marks a runner in use: stops its idle timer and applies the request's keep_alive. */
  private hold(entry: LoadedRunner, keepAliveMs: number | undefined): void {
    this.clearTimer(entry);
    if (keepAliveMs !== undefined && !entry.expired) entry.keepAliveMs = keepAliveMs;
  }

  /** Forces keep-alive 0: unloads now when idle, else when the last request releases it. */
  private expireEntry(entry: LoadedRunner, reason: UnloadReason): void {
    entry.unloadReason ??= reason;
    entry.expired = true;
    entry.keepAliveMs = 0;
    if (entry.refCount === 0) this.unload(entry);
  }

  private release(entry: LoadedRunner): void {
    const broken = entry.runner.broken?.();
    if (broken && !entry.expired) {
      this.logger.warn(`unloading ${entry.key}: ${broken}`);
      entry.unloadReason ??= 'failed';
      entry.expired = true;
      entry.keepAliveMs = 0;
    }
    entry.refCount = Math.max(0, entry.refCount - 1);
    if (entry.refCount > 0) return;
    this.threads.rebalance(this.runners.values());
    this.afterIdle(entry);
  }

  /** The reference count reached 0 (§7.4): unload now, never, or after the keep-alive. */
  private afterIdle(entry: LoadedRunner): void {
    if (this.runners.get(entry.key) !== entry || entry.refCount > 0) return;
    if (entry.expired || entry.keepAliveMs <= 0) {
      this.unload(entry);
      return;
    }
    this.clearTimer(entry);
    if (entry.keepAliveMs === Infinity) return;
    entry.expiresAt = new Date(Date.now() + entry.keepAliveMs);
    this.armTimer(entry);
  }

  private clearTimer(entry: LoadedRunner): void {
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.expiresAt = undefined;
  }

  private armTimer(entry: LoadedRunner): void {
    const remaining = (entry.expiresAt?.getTime() ?? 0) - Date.now();
    entry.timer = setTimeout(
      () => {
        entry.timer = undefined;
        if (entry.refCount > 0 || !entry.expiresAt) return;
        if (entry.expiresAt.getTime() > Date.now()) this.armTimer(entry);
        else this.unload(entry);
      },
      Math.max(0, Math.min(remaining, MAX_TIMER_MS)),
    );
    entry.timer.unref?.();
  }

  /**
   * A runner died on its own (its process ended): its requests have already failed with RunnerTerminatedError; it is
   * dropped now, busy or not (its memory is free), and the next request for the model loads it afresh.
   */
  private onDeath(entry: LoadedRunner, death: RunnerDeath): void {
    this.logger.warn(`unloading ${entry.key}: llama runner process has terminated: ${death.reason}`);
    this.crashed.add(entry.key);
    this.runnerEvents.next({ kind: 'crash', model: entry.name, cause: death.cause });
    this.unload(entry, 'failed');
  }

  private unload(entry: LoadedRunner, reason?: UnloadReason): void {
    if (entry.unloading) return;
    entry.unloading = true;
    this.loads.unloaded(entry.name, reason ?? entry.unloadReason ?? 'expired');
    entry.expired = true;
    this.clearTimer(entry);
    if (this.runners.get(entry.key) === entry) this.runners.delete(entry.key);
    this.ramCache.release(entry.runner.spec.cacheRamBytes ?? 0);
    this.logger.log(`unloading ${entry.key}`);
    const closed = this.capacity.unloading(entry.sizeBytes);
    void entry.runner
      .close()
      .catch((err: unknown) => this.logger.error(`closing ${entry.key} failed: ${(err as Error).message}`))
      .finally(() => {
        closed();
        entry.rpc?.release();
        entry.markGone();
      });
  }
}
