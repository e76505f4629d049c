import { afterEach, beforeEach, mock } from 'node:test';
import { Logger } from '@nestjs/common';
import { DaemonConfig } from '../../src/config';
import type { MemoryProbe } from '../../src/scheduler/memory.estimator';
import { SchedulerService } from '../../src/scheduler/scheduler.service';
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

/** A minute in milliseconds. */
export const MIN = 60_000;

/** The scheduler under test and its fakes; useScheduler replaces every field before each test. */
export interface SchedulerFixture {
  factory: ControlledFactory;
  memory: FakeMemory;
  config: DaemonConfig;
  scheduler: SchedulerService;
}

/**
 * Registers beforeEach/afterEach hooks in the calling describe(): before each test a new SchedulerService (keep_alive
 * 5 min, logging off) over a new ControlledFactory and FakeMemory, Nest's logger silenced, setTimeout and Date mocked
 * from 2026-01-01 (mock.timers); after each test the scheduler is shut down and the timers restored. Read the fields
 * inside the tests, not at describe() time.
 */
export function useScheduler(): SchedulerFixture {
  const fx = {} as SchedulerFixture;
  beforeEach(() => {
    Logger.overrideLogger(false);
    mock.timers.enable({ apis: ['setTimeout', 'Date'], now: Date.UTC(2026, 0, 1) });
    fx.factory = new ControlledFactory();
    fx.memory = new FakeMemory();
    fx.config = Object.assign(new DaemonConfig(), { keepAliveMs: 5 * MIN, logging: false });
    fx.scheduler = new SchedulerService(fx.config, fx.factory, fx.memory);
  });
  afterEach(async () => {
    await fx.scheduler.onApplicationShutdown();
    mock.timers.reset();
  });
  return fx;
}
