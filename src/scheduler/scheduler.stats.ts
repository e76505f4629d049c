import type { Runner } from '../runner';
import type { FairGate } from './fair-queue';
import type { RunnerStats, SchedulerStats } from './scheduler.types';

/** What schedulerStats reads of a loaded runner. */
export interface RunnerHolding {
  /** The model's short name (metrics label). */
  name: string;
  /** Requests holding or waiting for this runner. */
  refCount: number;
  runner: Runner;
  /** The runner's slot gate (its waiters count as queued); absent in hand-built entries. */
  gate?: FairGate;
}

/**
 * The gauges of GET /metrics at scrape time (SchedulerService.stats): requests waiting for a load or a slot (`queued`:
 * at a runner's slot gate, fair-queue.ts, or in the runner's own queue), requests holding a slot (`running`), and per
 * runner its slots and KV cache cells (from the runner's own usage report when it has one, else estimated from its
 * reference count and n_ctx × slots, or n_ctx for a shared cache), with its own waiting and running requests and its
 * LoRA adapters (for the per-model gauges of the inference gateway, model-server-metrics.ts).
 * @param pendingLoads requests waiting for a load, including the one loading now: per model name
 *   (LoadQueue.pendingByModel), or only their number
 */
export function schedulerStats(
  pendingLoads: number | ReadonlyMap<string, number>,
  entries: Iterable<RunnerHolding>,
): SchedulerStats {
  const byModel = typeof pendingLoads === 'number' ? new Map<string, number>() : pendingLoads;
  let queued = typeof pendingLoads === 'number' ? pendingLoads : 0;
  for (const count of byModel.values()) queued += count;
  let holding = 0;
  const runners: RunnerStats[] = [];
  for (const e of entries) {
    holding += e.refCount;
    const spec = e.runner.spec;
    const usage = e.runner.usage?.();
    const slotsTotal = spec.numParallel;
    // Waiting for a slot: at the slot gate, or (a runner that reports usage) in the runner's own queue.
    const gated = e.gate?.waiting ?? 0;
    const waiting = usage ? usage.queuedTasks + gated : Math.max(gated, e.refCount - slotsTotal);
    queued += waiting;
    holding -= waiting;
    runners.push({
      model: e.name,
      slotsTotal,
      slotsBusy: usage?.slotsBusy ?? Math.min(e.refCount, slotsTotal),
      slotsWaiting: usage?.slotsWaiting ?? 0,
      kvCellsTotal: usage?.kvCellsTotal ?? (spec.kvUnified ? spec.numCtx : spec.numCtx * slotsTotal),
      kvCellsUsed: usage?.kvCellsUsed ?? 0,
      kvUnified: spec.kvUnified ?? false,
      ramCacheEntries: usage?.ramCache?.entries ?? 0,
      ramCacheBytes: usage?.ramCache?.bytes ?? 0,
      ramCacheHits: usage?.ramCache?.hits ?? 0,
      ramCacheTokens: usage?.ramCache?.tokens ?? 0,
      draftTokens: usage?.draftTokens ?? 0,
      draftAccepted: usage?.draftAccepted ?? 0,
      waiting,
      running: Math.max(0, e.refCount - waiting),
      ...(usage?.loras ? { loras: usage.loras } : {}),
    });
  }
  const pending = [...byModel].map(([model, requests]) => ({ model, requests }));
  return { queued, running: Math.max(0, holding), runners, pendingLoads: pending };
}
