import { DaemonConfig } from '../config';
import { RunnerSpec } from '../runner';
import { DEFAULT_MAX_LOADED_MODELS } from './scheduler.types';

/** How many runners the scheduler keeps loaded at most: OLLAMA_MAX_LOADED_MODELS, or 3 when unset (0) (§7.3). */
export function maxLoadedModels(config: Pick<DaemonConfig, 'maxLoadedModels'>): number {
  return config.maxLoadedModels > 0 ? config.maxLoadedModels : DEFAULT_MAX_LOADED_MODELS;
}

/**
 * The host-RAM prompt cache of one runner, bytes: the daemon-wide budget (LLAMAD_CACHE_RAM MiB, DaemonConfig
 * .cacheRamMiB) divided by the most runners that can be loaded at once ({@link maxLoadedModels}), rounded down. Every
 * generation request asks for this share (CompletionService.plan → RunnerSpec.cacheRamBytes), so the share of a model
 * does not depend on what else is loaded and never forces a reload; 0 when the cache is off.
 */
export function ramCacheShareBytes(config: Pick<DaemonConfig, 'cacheRamMiB' | 'maxLoadedModels'>): number {
  return Math.floor((Math.max(0, config.cacheRamMiB) * 2 ** 20) / maxLoadedModels(config));
}

/**
 * The ledger of the daemon-wide host-RAM prompt cache budget (docs/native.md "Host-RAM prompt cache"). A load reserves
 * what its spec asks for (RunnerSpec.cacheRamBytes, normally {@link ramCacheShareBytes}) before the runner starts,
 * capped by what is left, and gives it back when the runner unloads or the load fails: the reservations of the runners
 * in memory (and of the loads under way) never add up to more than the budget. Each runner process caps its native
 * prompt cache at its grant (the engine's byte budget per context), so the processes together stay within it too.
 * Main thread only (the scheduler's state).
 */
export class RamCacheBudget {
  private reserved = 0;

  /** @param budgetBytes the whole daemon's budget, bytes (0: the cache is off and every grant is 0). */
  constructor(readonly budgetBytes: number) {}

  /**
   * Reserves the host-RAM cache of a runner about to load.
   * @returns `bytes`: the grant, min(spec.cacheRamBytes, budget − reserved), ≥ 0; `spec`: the spec to load with —
   *   `spec` itself when it gets all it asked for, else a copy whose cacheRamBytes is the grant (absent when 0: off).
   */
  reserve(spec: RunnerSpec): { spec: RunnerSpec; bytes: number } {
    const wanted = Math.max(0, Math.floor(spec.cacheRamBytes ?? 0));
    const bytes = Math.max(0, Math.min(wanted, this.budgetBytes - this.reserved));
    this.reserved += bytes;
    if (bytes === (spec.cacheRamBytes ?? 0)) return { spec, bytes };
    const { cacheRamBytes: _asked, ...rest } = spec;
    return { spec: bytes > 0 ? { ...rest, cacheRamBytes: bytes } : rest, bytes };
  }

  /** Gives back a grant of {@link reserve} (the runner unloaded, died or failed to load). */
  release(bytes: number): void {
    this.reserved = Math.max(0, this.reserved - Math.max(0, bytes));
  }

  /** Bytes reserved now, over every runner loaded or loading (≤ budgetBytes). */
  reservedBytes(): number {
    return this.reserved;
  }
}
