import { InvalidRequestError, RequestCancelledError } from '../common/errors';
import type { RunnerLora, RunnerUsage } from './runner';

/** Default of RunnerSpec.maxLoras (LLAMAD_MAX_LORAS). */
export const DEFAULT_MAX_LORAS = 4;

/** What the residency loads and frees adapters with (binding.d.ts NativeModel.loadLora / unloadLora). */
export interface LoraLoader {
  /** Loads the adapter at `path` over the runner's weights. Rejects with the load error (a domain error). */
  load(path: string): Promise<void>;
  /** Frees it: `busy` when the engine still holds it (it stays loaded). */
  unload(path: string): Promise<'unloaded' | 'absent' | 'busy'>;
}

interface Resident {
  /** Name reported for it (the adapter model's name of its latest request). */
  name: string;
  /** Admitted generations using it. */
  refs: number;
  /** performance.now() of its last release, for least-recently-used eviction. */
  lastUsed: number;
  state: 'loading' | 'ready' | 'unloading';
  /** Settles when the adapter is loaded (rejects when the load failed). */
  ready: Promise<void>;
}

interface Waiter {
  loras: RunnerLora[];
  admit: (ready: Promise<void>) => void;
}

/**
 * The LoRA adapters resident over one runner's weights (RunnerSpec.maxLoras, LLAMAD_MAX_LORAS): at most `max` at once,
 * loaded on first use, the least recently used idle one unloaded to make room. A generation is admitted with its whole
 * adapter set at once (never one adapter at a time, so that two generations cannot each hold half of what the other
 * needs); when its set does not fit beside the adapters other generations use, it waits, first come first served.
 * Main-thread state only; the loads and unloads run on the addon's pool.
 */
export class LoraResidency {
  private readonly resident = new Map<string, Resident>();
  private readonly waiters: Waiter[] = [];

  /**
   * @param max adapters resident at once (at least 1).
   * @param loader loads and frees them.
   * @param changed called when what {@link usage} reports changed without a generation event (a wait began or ended).
   */
  constructor(
    private readonly max: number,
    private readonly loader: LoraLoader,
    private readonly changed: () => void = () => {},
  ) {}

  /**
   * Admits a generation with `loras` (zero scales left out): resolves once each adapter is loaded, with the release
   * to call when the generation ends (idempotent).
   * @throws InvalidRequestError when the set has more distinct adapters than `max`; RequestCancelledError when
   *   `signal` aborts while it waits; the loader's error when an adapter cannot be loaded.
   */
  async acquire(loras: RunnerLora[], signal?: AbortSignal): Promise<() => void> {
    const used = appliedLoras(loras);
    if (used.length === 0) return () => {};
    if (used.length > this.max) {
      throw new InvalidRequestError(
        `the request applies ${used.length} LoRA adapters, more than the ${this.max} a model keeps loaded (LLAMAD_MAX_LORAS)`,
      );
    }
    const ready = this.tryAdmit(used) ?? (await this.wait(used, signal));
    const release = once(() => this.release(used));
    try {
      await ready;
    } catch (err) {
      release();
      throw err;
    }
    return release;
  }

  /** Adapter names for RunnerUsage.loras: resident, used by admitted generations, wanted by waiting ones. */
  usage(): NonNullable<RunnerUsage['loras']> {
    const resident = [...this.resident.values()];
    const waiting = new Set<string>();
    for (const waiter of this.waiters) for (const lora of waiter.loras) waiting.add(lora.name);
    return {
      max: this.max,
      resident: unique(resident.filter((r) => r.state !== 'unloading').map((r) => r.name)),
      running: unique(resident.filter((r) => r.refs > 0).map((r) => r.name)),
      waiting: [...waiting],
    };
  }

  /**
   * Admits `loras` now when they fit (pins the resident ones, starts the loads of the others after evicting idle
   * ones); returns the promise of their readiness, or undefined when they must wait.
   */
  private tryAdmit(loras: RunnerLora[]): Promise<void> | undefined {
    if (loras.some((l) => this.resident.get(l.path)?.state === 'unloading')) return undefined;
    const missing = loras.filter((l) => !this.resident.has(l.path));
    const wanted = new Set(loras.map((l) => l.path));
    const idle = [...this.resident.entries()]
      .filter(([path, r]) => r.refs === 0 && r.state === 'ready' && !wanted.has(path))
      .sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    const free = this.max - this.resident.size;
    const evictions = Math.max(0, missing.length - free);
    if (evictions > idle.length) return undefined;
    const evicted = Promise.all(idle.slice(0, evictions).map(([path, r]) => this.evict(path, r)));
    const readiness: Promise<void>[] = [];
    for (const lora of loras) {
      const present = this.resident.get(lora.path);
      if (present) {
        present.refs++;
        present.name = lora.name;
        readiness.push(present.ready);
        continue;
      }
      const entry: Resident = { name: lora.name, refs: 1, lastUsed: 0, state: 'loading', ready: Promise.resolve() };
      entry.ready = evicted
        .then(() => this.loader.load(lora.path))
        .then(
          () => {
            entry.state = 'ready';
          },
          (err: unknown) => {
            // A failed load leaves nothing resident: the next request tries again.
            if (this.resident.get(lora.path) === entry) this.resident.delete(lora.path);
            this.pump();
            throw err;
          },
        );
      entry.ready.catch(() => {}); // observed by each admitted generation
      this.resident.set(lora.path, entry);
      readiness.push(entry.ready);
    }
    return Promise.all(readiness).then(() => undefined);
  }

  private async evict(path: string, entry: Resident): Promise<void> {
    entry.state = 'unloading';
    let outcome: 'unloaded' | 'absent' | 'busy' = 'busy';
    try {
      outcome = await this.loader.unload(path);
    } catch {
      outcome = 'busy';
    }
    if (outcome === 'busy') {
      entry.state = 'ready'; // still loaded: it stays resident (over the bound until the next eviction)
    } else if (this.resident.get(path) === entry) {
      this.resident.delete(path);
    }
    this.pump();
  }

  private wait(loras: RunnerLora[], signal?: AbortSignal): Promise<Promise<void>> {
    if (signal?.aborted) return Promise.reject(new RequestCancelledError());
    return new Promise<Promise<void>>((resolve, reject) => {
      const onAbort = () => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        this.changed();
        reject(new RequestCancelledError());
      };
      const waiter: Waiter = {
        loras,
        admit: (ready) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(ready);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      this.changed();
    });
  }

  private release(loras: RunnerLora[]): void {
    const now = performance.now();
    for (const lora of loras) {
      const entry = this.resident.get(lora.path);
      if (!entry) continue;
      entry.refs = Math.max(0, entry.refs - 1);
      entry.lastUsed = now;
    }
    this.pump();
  }

  /** Admits waiting generations in arrival order while the first one fits. */
  private pump(): void {
    let admitted = false;
    while (this.waiters.length > 0) {
      const ready = this.tryAdmit(this.waiters[0].loras);
      if (!ready) break;
      this.waiters.shift()!.admit(ready);
      admitted = true;
    }
    if (admitted) this.changed();
  }
}

/** The adapters a generation applies: non-zero scales, one entry per path (the last one wins). */
export function appliedLoras(loras: RunnerLora[]): RunnerLora[] {
  const byPath = new Map<string, RunnerLora>();
  for (const lora of loras) if (lora.scale !== 0) byPath.set(lora.path, lora);
  return [...byPath.values()];
}

function unique(names: string[]): string[] {
  return [...new Set(names)];
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
