import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Subject } from 'rxjs';
import { fairTicket } from '../../../src/scheduler/fair-queue';
import { RunnerLease } from '../../../src/scheduler/scheduler.service';
import { spec } from '../../utils/fake-runner';
import { flush, useScheduler } from '../../utils/scheduler-fakes';

// The slot gate as the scheduler hands it out (fair-queue.ts has the queue's own tests): one per runner instance,
// sized by the runner's slots (one permit per slot), and its waiters counted as queued.
describe('SchedulerService slot gate', () => {
  const fx = useScheduler();

  it('gives every lease of a runner the same gate of numParallel permits, and a reloaded runner a fresh one', async () => {
    const a = await fx.scheduler.acquire({ spec: spec({ numParallel: 3 }) });
    const b = await fx.scheduler.acquire({ spec: spec({ numParallel: 3 }) });
    assert.equal(a.slots, b.slots);
    assert.equal(a.slots.permits, 3, 'one per slot');
    a.release();
    b.release();
    const c = await fx.scheduler.acquire({ spec: spec({ numParallel: 2 }) }); // other load options: a reload
    assert.notEqual(c.runner, a.runner);
    assert.notEqual(c.slots, a.slots);
    assert.equal(c.slots.permits, 2);
    c.release();
  });

  it('counts generations waiting at the gate as queued, and hands a freed slot to the next waiter', async () => {
    const leases: RunnerLease[] = [];
    for (let i = 0; i < 3; i++) leases.push(await fx.scheduler.acquire({ spec: spec({ numParallel: 1 }) }));
    const generations = leases.map(() => new Subject<number>());
    const started: number[] = [];
    const subs = leases.map((lease, i) =>
      lease.slots
        .admit(fairTicket(`p${i}`, 1), () => {
          started.push(i);
          return generations[i];
        })
        .subscribe({ complete: () => lease.release() }),
    );
    assert.deepEqual(started, [0]);
    assert.equal(fx.scheduler.stats().queued, 2);
    assert.equal(fx.scheduler.stats().running, 1);
    subs[1].unsubscribe(); // the client of the second left while waiting
    leases[1].release();
    assert.equal(fx.scheduler.stats().queued, 1);
    generations[0].complete();
    assert.deepEqual(started, [0, 2]);
    assert.equal(fx.scheduler.stats().queued, 0);
    generations[2].complete();
    await flush();
    assert.equal(fx.scheduler.loaded()[0].refCount, 0);
    assert.equal(leases[0].slots.running, 0);
  });
});
