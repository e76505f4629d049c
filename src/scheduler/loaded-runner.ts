import type { UnloadReason } from '../observability/model-events';
import type { Runner } from '../runner';
import type { FairGate } from './fair-queue';
import type { RpcClaim } from './rpc-endpoints';
import type { LoadedRunnerInfo } from './scheduler.types';

/** A loaded runner and its bookkeeping (Ollama `runnerRef`, reference/ollama-api.md §7.1). */
export interface LoadedRunner {
  key: string;
  runner: Runner;
  /** In-flight requests holding this runner. */
  refCount: number;
  /** How long to stay loaded once idle, ms (Infinity = forever, 0 = unload when idle). */
  keepAliveMs: number;
  timer?: NodeJS.Timeout;
  /** When the idle timer fires (undefined while in use or forever). */
  expiresAt?: Date;
  /** Set when the runner must go as soon as it is idle (reload, eviction, keep_alive 0, delete). */
  expired: boolean;
  /** Why it was marked to go (the `unload` event's reason); absent: its keep-alive ran out. */
  unloadReason?: UnloadReason;
  /** Estimated resident bytes (memory.estimator.ts). */
  sizeBytes: number;
  /** Resolves once the runner is unloaded and closed. */
  gone: Promise<void>;
  markGone: () => void;
  /** Whether unload() already ran. */
  unloading: boolean;
  /** The model name it was last acquired under (metrics labels); the weights path until one is given. */
  name: string;
  /** The RPC workers it holds until it is gone (rpc-endpoints.ts). */
  rpc?: RpcClaim<LoadedRunner>;
  /** The slot gate of this runner instance (fair-queue.ts): generations wait there for one of its slots. */
  gate: FairGate;
  /** When its runner was created (the factory's load), [start, end] in `performance.now()` ms (RunnerLease.loadWindow). */
  loadWindow?: readonly [number, number];
}

/** The /api/ps view of loaded runners (SchedulerService.loaded), in the map's order. */
export function loadedRunnerInfo(entries: Iterable<LoadedRunner>): LoadedRunnerInfo[] {
  return [...entries].map((e) => {
    const measured = e.runner.memory?.();
    const usage = e.runner.usage?.();
    return {
      spec: e.runner.spec,
      refCount: e.refCount,
      expiresAt: e.expiresAt,
      keepAliveMs: e.keepAliveMs,
      sizeBytes: measured?.totalBytes ?? e.sizeBytes,
      sizeVramBytes: measured?.vramBytes ?? 0,
      ...(measured ? { devices: measured.devices } : {}),
      ...(usage ? { usage: { ...usage, queuedTasks: usage.queuedTasks + e.gate.waiting } } : {}),
      expired: e.expired,
      ...(e.runner.pid !== undefined ? { pid: e.runner.pid } : {}),
      ...(e.name !== undefined && e.name !== e.key ? { name: e.name } : {}),
    };
  });
}
