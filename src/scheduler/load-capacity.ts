import { DEFAULT_MAX_LOADED_MODELS, MEMORY_FIT_RATIO } from './scheduler.types';
import type { MemoryProbe } from './memory.estimator';

/** What capacity planning reads of a loaded runner (SchedulerService's LoadedRunner). */
export interface CapacityEntry {
  /** The weights path. */
  key: string;
  /** Estimated resident bytes. */
  sizeBytes: number;
  /** Keep-alive, ms (Infinity = forever). */
  keepAliveMs: number;
  /** In-flight requests. */
  refCount: number;
}

/**
 * The scheduler's count and memory accounting while several loads run at once (reference/ollama-api.md §7.3, with
 * loads of different models in parallel: issue 32 item 5). A load reserves its estimate before its runner starts
 * (`makeRoom`), and the reservation counts — as a resident model and as used memory — in every later decision until
 * the load ends (its runner is then in `runners`, or it failed). A runner being closed keeps counting until it is gone
 * (`unloading`). All state is touched on the main thread only.
 */
export class LoadCapacity<E extends CapacityEntry> {
  /** Estimates of the loads in flight, bytes. */
  private readonly reservations = new Set<{ bytes: number }>();
  /** Bytes of runners closed but not gone yet. */
  private unloadingBytes = 0;
  /** Called when a load in flight ends (see {@link settled}). */
  private waiters: (() => void)[] = [];

  constructor(
    private readonly runners: Map<string, E>,
    private readonly memory: MemoryProbe,
    /** OLLAMA_MAX_LOADED_MODELS (0 → DEFAULT_MAX_LOADED_MODELS). */
    private readonly maxLoadedModels: () => number,
  ) {}

  /** Loads in flight (reserved). */
  loading(): number {
    return this.reservations.size;
  }

  /**
   * Free bytes for a new runner: the system's view less the reservations of loads in flight, capped by total − the
   * estimates of the loaded runners, of the loads in flight and of the runners still closing.
   */
  freeBytes(): number {
    let reserved = 0;
    for (const r of this.reservations) reserved += r.bytes;
    let used = reserved + this.unloadingBytes;
    for (const e of this.runners.values()) used += e.sizeBytes;
    return Math.max(0, Math.min(this.memory.free() - reserved, this.memory.total() - used));
  }

  /**
   * Why a runner of `needed` bytes cannot load now without an eviction, or undefined: OLLAMA_MAX_LOADED_MODELS
   * resident or loading, or more than 80 % of the free memory (only checked when something is loaded or loading: the
   * first model always loads).
   */
  whyNoRoom(needed: number): string | undefined {
    const cap = this.maxLoadedModels() > 0 ? this.maxLoadedModels() : DEFAULT_MAX_LOADED_MODELS;
    const count = this.runners.size + this.reservations.size;
    if (count >= cap) return `${count} models loaded or loading (max ${cap})`;
    if (count > 0) {
      const free = this.freeBytes();
      if (needed > MEMORY_FIT_RATIO * free) return `needs ${needed} bytes, ${free} free`;
    }
    return undefined;
  }

  /**
   * Ollama's findRunnerToUnload (§7.3): by keep-alive ascending (forever last), then path; the first idle one, else
   * the first one at all (the caller waits for its in-flight requests). Loads in flight are never victims.
   */
  findVictim(): E | undefined {
    const sorted = [...this.runners.values()].sort(
      (a, b) => a.keepAliveMs - b.keepAliveMs || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
    );
    return sorted.find((e) => e.refCount === 0) ?? sorted[0];
  }

  /**
   * Makes room for a load of `needed` bytes and reserves them: while {@link whyNoRoom} says so, evicts an idle
   * victim (`evict` resolves once it is gone); else, while loads are in flight, waits for one to end; else evicts a
   * busy victim (waiting for its requests); with nothing to evict, the load goes ahead anyway. The check and the
   * reservation happen in one turn of the event loop.
   * @param check throws to stop waiting (the scheduler shuts down); called before every decision.
   * @returns the release of the reservation (idempotent): call it once the load ended, after its runner (if any) was
   *   added to `runners`.
   */
  async makeRoom(
    needed: number,
    evict: (victim: E, reason: string) => Promise<void>,
    check: () => void,
  ): Promise<() => void> {
    for (;;) {
      check();
      const reason = this.whyNoRoom(needed);
      if (!reason) break;
      const victim = this.findVictim();
      // A busy victim is only waited for when no load in flight could end first (and perhaps free the room).
      if (victim && (victim.refCount === 0 || this.reservations.size === 0)) await evict(victim, reason);
      else if (this.reservations.size > 0) await this.settled();
      else break;
    }
    const reservation = { bytes: needed };
    this.reservations.add(reservation);
    return () => {
      if (!this.reservations.delete(reservation)) return;
      for (const wake of this.waiters.splice(0)) wake();
    };
  }

  /** Counts a closing runner's bytes until the returned function is called (it is gone). */
  unloading(bytes: number): () => void {
    this.unloadingBytes += bytes;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.unloadingBytes -= bytes;
    };
  }

  /** Resolves when the next load in flight ends. */
  private settled(): Promise<void> {
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}
