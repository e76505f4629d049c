import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunnerUsage } from '../../../src/runner';
import { FairGate, fairTicket } from '../../../src/scheduler/fair-queue';
import { schedulerStats } from '../../../src/scheduler/scheduler.stats';
import { FakeRunner, spec } from '../../utils/fake-runner';

/** A FakeRunner that reports a fixed usage, as the native runners do. */
class ReportingRunner extends FakeRunner {
  constructor(private readonly report: RunnerUsage) {
    super(spec({ numParallel: 2 }));
  }

  usage(): RunnerUsage {
    return this.report;
  }
}

/** A gate of 2 permits with both taken and `waiting` more generations queued. */
function busyGate(waiting: number): FairGate {
  const gate = new FairGate(2);
  for (let i = 0; i < 2 + waiting; i++) gate.enter(fairTicket(`p${i % 3}`, 1), () => undefined);
  return gate;
}

describe('schedulerStats', () => {
  it("counts generations waiting at a runner's slot gate as queued, with those in the runner's own queue", () => {
    const runner = new ReportingRunner({ slotsBusy: 2, queuedTasks: 1, kvCellsTotal: 2048, kvCellsUsed: 100 });
    // 2 in slots, 1 in the runner's queue (a hand-off in flight), 3 at the gate.
    const stats = schedulerStats(1, [{ name: 'm', refCount: 6, runner, gate: busyGate(3) }]);
    assert.equal(stats.queued, 1 + 1 + 3);
    assert.equal(stats.running, 2);
    assert.equal(stats.runners[0].slotsBusy, 2);
  });

  it('without a usage report, estimates from the reference count and never below the gate', () => {
    const runner = new FakeRunner(spec({ numParallel: 2 }));
    assert.equal(schedulerStats(0, [{ name: 'm', refCount: 5, runner, gate: busyGate(3) }]).queued, 3);
    // Requests that hold the runner but are not at the gate yet (preparing their prompt) do not count.
    assert.equal(schedulerStats(0, [{ name: 'm', refCount: 2, runner, gate: new FairGate(2) }]).queued, 0);
    assert.equal(schedulerStats(0, [{ name: 'm', refCount: 4, runner }]).queued, 2);
  });

  it("counts requests waiting for a load per model, with each runner's own waiting and running requests", () => {
    const loras = { max: 4, resident: ['a'], running: ['a'], waiting: ['b'] };
    const runner = new ReportingRunner({ slotsBusy: 2, queuedTasks: 0, kvCellsTotal: 2048, kvCellsUsed: 100, loras });
    const pending = new Map([
      ['m', 1],
      ['other:latest', 2],
    ]);
    const stats = schedulerStats(pending, [{ name: 'm', refCount: 4, runner, gate: busyGate(2) }]);
    assert.equal(stats.queued, 1 + 2 + 2);
    assert.deepEqual(stats.pendingLoads, [
      { model: 'm', requests: 1 },
      { model: 'other:latest', requests: 2 },
    ]);
    assert.equal(stats.runners[0].waiting, 2);
    assert.equal(stats.runners[0].running, 2);
    assert.deepEqual(stats.runners[0].loras, loras);
  });
});
