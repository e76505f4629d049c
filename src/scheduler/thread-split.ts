import { machinePhysicalCores, Runner, splitThreads } from '../runner';

/** What the balancer reads of a loaded runner. */
export interface ThreadHolder {
  runner: Runner;
  /** Requests holding the runner: > 0 means it decodes (or is about to). */
  refCount: number;
}

/**
 * Splits the CPU's physical cores between the runners that decode at the same time (docs/native.md "Threads"): each
 * model runs in its own runner process, so only the daemon sees them all. A runner counts as decoding while requests
 * hold it (refCount > 0). On every change of that set (a request takes an idle runner, the last one releases it)
 * the busy runners get equal shares through Runner.setThreads, which the runner applies before its next decode step
 * (llama_set_n_threads); a new load starts with the share it will have among the busy runners. Runners whose spec
 * has an explicit num_thread (the option, or LLAMAD_THREADS) keep it, but still count as decoding. Idle runners are
 * left alone: they get their share when they become busy.
 */
export class ThreadBalancer {
  /** The count last sent to each runner, so that an unchanged share sends nothing. */
  private readonly applied = new WeakMap<Runner, number>();

  /** @param total threads to share (default: the machine's physical cores, machinePhysicalCores). */
  constructor(private readonly total: number = machinePhysicalCores()) {}

  /** Threads for a runner about to load beside `entries` (it will be busy: a request waits for it). */
  forLoad(entries: Iterable<ThreadHolder>): number {
    const busy = [...entries].filter((e) => e.refCount > 0).length;
    const shares = splitThreads(this.total, busy + 1);
    return shares[shares.length - 1];
  }

  /** Records the count a runner was loaded with (no setThreads needed until the split changes). */
  loaded(runner: Runner, threads: number): void {
    this.applied.set(runner, threads);
  }

  /** Shares the cores anew between the busy runners of `entries`; sends only changed counts. */
  rebalance(entries: Iterable<ThreadHolder>): void {
    const busy = [...entries].filter((e) => e.refCount > 0);
    const shares = splitThreads(this.total, busy.length);
    busy.forEach((entry, i) => {
      const runner = entry.runner;
      if (runner.spec.numThread > 0 || !runner.setThreads) return;
      if (this.applied.get(runner) === shares[i]) return;
      this.applied.set(runner, shares[i]);
      runner.setThreads(shares[i]);
    });
  }
}
