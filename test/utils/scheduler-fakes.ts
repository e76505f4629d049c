import type { MemoryProbe } from '../../src/scheduler/memory.estimator';
import type { Runner, RunnerFactory, RunnerSpec } from '../../src/runner/runner';
import { FakeRunner } from './fake-runner';

/** A promise with its resolve/reject exposed. */
export interface Gate {
  promise: Promise<void>;
  open(): void;
  fail(err: Error): void;
}

export function gate(): Gate {
  let open!: () => void;
  let fail!: (err: Error) => void;
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

/**
 * A RunnerFactory driven by the test, using no timers (so it works under mock.timers): loads finish on the next
 * microtask unless `hold` is set, in which case each load waits for its gate in `gates`.
 */
export class ControlledFactory implements RunnerFactory {
  readonly created: FakeRunner[] = [];
  /** Every create() call's spec, in order (including failed ones). */
  readonly requested: RunnerSpec[] = [];
  readonly gates: Gate[] = [];
  hold = false;
  fail?: Error;

  async create(spec: RunnerSpec): Promise<Runner> {
    this.requested.push(spec);
    if (this.hold) {
      const g = gate();
      this.gates.push(g);
      await g.promise;
    }
    if (this.fail) throw this.fail;
    const runner = new FakeRunner(spec);
    this.created.push(runner);
    return runner;
  }

  /** Runners created and not closed. */
  open(): FakeRunner[] {
    return this.created.filter((r) => !r.closed);
  }
}

/** A MemoryProbe with fixed numbers: `sizes` by model path (default `defaultSize`), `freeBytes`, `totalBytes`. */
export class FakeMemory implements MemoryProbe {
  readonly sizes = new Map<string, number>();
  defaultSize = 1;
  freeBytes = 1e12;
  totalBytes = 1e12;

  async estimate(spec: RunnerSpec): Promise<number> {
    return Promise.resolve(this.sizes.get(spec.modelPath) ?? this.defaultSize);
  }

  free(): number {
    return this.freeBytes;
  }

  total(): number {
    return this.totalBytes;
  }
}

/** Lets pending promise continuations run (setImmediate is not mocked by the tests' mock.timers). */
export async function flush(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}
