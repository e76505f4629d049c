import type { Runner, RunnerSpec, RunnerUsage } from '../runner';
import type { FairGate } from './fair-queue';

/* The scheduler's public shapes and constants (SchedulerService, scheduler.service.ts). */

/** OLLAMA_MAX_LOADED_MODELS when unset (0): 3 × GPUs, and 3 on CPU (§7.3). */
export const DEFAULT_MAX_LOADED_MODELS = 3;

/** A new load may use at most this share of the free memory before something is evicted (§7.3). */
export const MEMORY_FIT_RATIO = 0.8;

/** A runner held for one request. Call `release()` exactly once when the request is over (extra calls are no-ops). */
export interface RunnerLease {
  runner: Runner;
  /**
   * The runner's slot gate (fair-queue.ts): a generation runs through `slots.gated(ticket)` so that at most
   * numParallel generations are in the runner (slotGatePermits); the others wait in weighted fair order across
   * principals.
   */
  slots: FairGate;
  /** Time spent waiting for the scheduler and the load, ns (Ollama's load_duration). */
  loadDurationNs: number;
  /**
   * When the runner was loaded, [start, end] in `performance.now()` ms (the spans of a traced request: a load that
   * ended during this request's wait is its `llamad.model.load`).
   */
  loadWindow?: readonly [number, number];
  release(): void;
}

/** What to acquire. */
export interface AcquireRequest {
  spec: RunnerSpec;
  /** The request's keep_alive in ms (Infinity = forever), or undefined to keep the runner's current value. */
  keepAliveMs?: number;
  /**
   * A loaded runner whose context is larger than `spec.numCtx` (all else equal) serves the request without a reload:
   * set by requests that grew the context for a long prompt (the compat layers), so that the next turn of the same
   * conversation does not shrink it back.
   */
  acceptLargerContext?: boolean;
  /** The model's short name (`tiny:latest`), kept with the runner for metrics labels; default the weights path. */
  modelName?: string;
  /**
   * false: `modelName` names a runner this request loads but does not rename a loaded one — an adapter model's request
   * on its base weights' runner, whose metrics label (`model_name`) then stays the base's. Default true.
   */
  namesRunner?: boolean;
}

/** One loaded runner's load, as the metrics gauges read it at scrape time (see {@link SchedulerService.stats}). */
export interface RunnerStats {
  /** The model name it was last acquired under (the weights path when none was given). */
  model: string;
  /** Slots of the runner (OLLAMA_NUM_PARALLEL at load; 4 when unset). */
  slotsTotal: number;
  /** Slots decoding a generation now. */
  slotsBusy: number;
  /** Of those, slots whose generation waits for KV cells of the shared cache (OLLAMA_NUM_PARALLEL unset). */
  slotsWaiting: number;
  /** KV cache size, cells (tokens over all slots: num_ctx × slots, or num_ctx when the slots share the cache). */
  kvCellsTotal: number;
  /**
   * KV cells held by generations in flight (prompt + tokens generated so far), as the runner's engine counts them;
   * cells an idle slot keeps for prefix reuse are not counted. 0 for runners that do not report usage.
   */
  kvCellsUsed: number;
  /** Whether the slots share one KV cache (RunnerSpec.kvUnified). */
  kvUnified: boolean;
  /** Host-RAM prompt cache (LLAMAD_CACHE_RAM): sequences kept and their bytes now (0 when off or not reported). */
  ramCacheEntries: number;
  ramCacheBytes: number;
  /** Since the load: prompts restored from the host-RAM cache, and the prompt tokens that spared evaluating. */
  ramCacheHits: number;
  ramCacheTokens: number;
  /** Speculative decoding since the runner was loaded: tokens drafted and verified, and the accepted ones. */
  draftTokens: number;
  draftAccepted: number;
  /** Requests waiting for one of its slots: at its slot gate (fair-queue.ts) or in the runner's own queue. */
  waiting: number;
  /** Requests holding it that are not waiting for a slot (generating, embedding, counting tokens). */
  running: number;
  /** Its LoRA adapters as the runner reports them (RunnerUsage.loras; absent: none or not reported). */
  loras?: { max: number; resident: string[]; running: string[]; waiting: string[] };
}

/** The scheduler's load at one instant (GET /metrics gauges). */
export interface SchedulerStats {
  /** Requests waiting: for a model load (OLLAMA_MAX_QUEUE's queue) or for a free slot of a loaded runner. */
  queued: number;
  /** Requests holding a runner that are not waiting for a slot. */
  running: number;
  /** One entry per loaded runner. */
  runners: RunnerStats[];
  /**
   * Requests waiting for a model load (including the one loading now) per model name, the name the runner will
   * carry; only models with such requests appear. Part of `queued`.
   */
  pendingLoads: { model: string; requests: number }[];
}

/** What loading a spec would need against what is available, bytes (see {@link SchedulerService.memoryFit}). */
export interface MemoryFit {
  fits: boolean;
  neededBytes: number;
  availableBytes: number;
}

/** One loaded runner as /api/ps sees it (§3.7). */
export interface LoadedRunnerInfo {
  spec: RunnerSpec;
  /** In-flight requests. */
  refCount: number;
  /** When the idle timer fires; undefined while in use or kept forever. */
  expiresAt?: Date;
  /** Keep-alive in ms (Infinity = forever). */
  keepAliveMs: number;
  /**
   * Resident bytes (weights + KV cache + compute): measured from the backend buffers when the runner reports
   * memory(), else the load-time estimate.
   */
  sizeBytes: number;
  /** Of sizeBytes, the part in device memory (VRAM); 0 on CPU or when not measured. */
  sizeVramBytes: number;
  /**
   * Where sizeBytes lives, largest first (RunnerMemory.devices: 'CPU', local devices, RPC worker devices with their
   * endpoint); absent when the runner does not measure its memory.
   */
  devices?: { name: string; bytes: number; endpoint?: string }[];
  /** The model name it was last acquired under (absent when none was given). */
  name?: string;
  /**
   * Slots and KV cells in use now (the runner's usage(); absent when it reports none); its queuedTasks also counts the
   * generations waiting at the runner's slot gate.
   */
  usage?: RunnerUsage;
  /** Whether it is marked to unload once idle. */
  expired: boolean;
  /** The runner process's OS process id (Runner.pid); absent for an in-process runner. */
  pid?: number;
}

/**
 * Whether a loaded runner (`a`) can serve a request (`b`): Ollama's needsReload, negated; num_gpu -1 matches
 * anything; with `acceptLargerContext` a larger loaded context also serves. The host-RAM prompt cache size
 * (cacheRamBytes) is not compared: it is the scheduler's grant from the daemon-wide budget (ram-cache-budget.ts), not a
 * load option, and may be less than a request asks for when the budget is short.
 */
export function sameSpec(a: RunnerSpec, b: RunnerSpec, acceptLargerContext = false): boolean {
  return (
    a.modelPath === b.modelPath &&
    (a.numCtx === b.numCtx || (acceptLargerContext && a.numCtx > b.numCtx)) &&
    a.numParallel === b.numParallel &&
    (a.kvUnified ?? false) === (b.kvUnified ?? false) &&
    a.numBatch === b.numBatch &&
    a.numThread === b.numThread &&
    (a.numGpu === b.numGpu || a.numGpu < 0 || b.numGpu < 0) &&
    (a.mainGpu ?? 0) === (b.mainGpu ?? 0) &&
    (a.useMmap ?? true) === (b.useMmap ?? true) &&
    (a.projectorPath ?? '') === (b.projectorPath ?? '') &&
    (a.rpcServers ?? []).join(',') === (b.rpcServers ?? []).join(',') &&
    (a.flashAttention ?? 'auto') === (b.flashAttention ?? 'auto') &&
    (a.kvCacheType ?? 'f16') === (b.kvCacheType ?? 'f16') &&
    (a.draftModelPath ?? '') === (b.draftModelPath ?? '')
  );
}

/**
 * A runner started (a load succeeded; `restart` when the model's previous runner had died) or died on its own
 * (`cause` as RunnerDeath's). `model` is the name it was loaded for.
 */
export type RunnerLifecycleEvent =
  | { kind: 'start'; model: string; restart: boolean }
  | { kind: 'crash'; model: string; cause: 'abort' | 'signal' | 'exit' | 'oom' | 'hang' };
