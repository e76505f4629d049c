import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Logger } from '@nestjs/common';
import { DaemonConfig } from '../../../src/config';
import { RunnerLease, SchedulerService } from '../../../src/scheduler/scheduler.service';
import { FakeRunner, spec } from '../../utils/fake-runner';
import { ControlledFactory, FakeMemory, flush } from '../../utils/scheduler-fakes';

const W1 = '10.0.0.2:50052';
const W2 = '10.0.0.3:50052';

/** The scheduler's RPC endpoint tracking across runner processes (issue 32 item 7; rpc-endpoints.ts). */
describe('SchedulerService and RPC workers', () => {
  let factory: ControlledFactory;
  let scheduler: SchedulerService;

  beforeEach(() => {
    Logger.overrideLogger(false);
    factory = new ControlledFactory();
    const config = Object.assign(new DaemonConfig(), { keepAliveMs: 5 * 60_000, logging: false });
    scheduler = new SchedulerService(config, factory, new FakeMemory());
  });

  afterEach(async () => {
    await scheduler.onApplicationShutdown();
  });

  const acquire = (modelPath: string, rpcServers: string[]) =>
    scheduler.acquire({ spec: spec({ modelPath, rpcServers }) });
  const paths = () =>
    scheduler
      .loaded()
      .map((r) => r.spec.modelPath)
      .sort();
  const closed = (lease: RunnerLease) => (lease.runner as FakeRunner).closed;

  it('a second model on the same worker evicts the idle first before its runner starts', async () => {
    const a = await acquire('/m/a', [W1]);
    a.release();
    assert.deepEqual(paths(), ['/m/a'], 'idle under its keep-alive');
    const b = await acquire('/m/b', [W2, W1.toUpperCase()]);
    assert.ok(closed(a), 'the first runner was closed');
    assert.deepEqual(paths(), ['/m/b']);
    assert.equal(factory.requested.length, 2);
    assert.deepEqual(
      factory.open().map((r) => r.spec.modelPath),
      ['/m/b'],
      'never two runner processes on one worker',
    );
    b.release();
  });

  it('a second model on a busy worker waits until the first is idle, then loads', async () => {
    const a = await acquire('/m/a', [W1]);
    let loaded: RunnerLease | undefined;
    const pending = acquire('/m/b', [W1]).then((l) => (loaded = l));
    await flush();
    assert.equal(loaded, undefined, 'waits while the first runner is in use');
    assert.equal(factory.requested.length, 1, 'the second runner was not started');
    assert.ok(!closed(a), 'the busy runner is not closed under its request');
    assert.ok(scheduler.loaded()[0].expired, 'no new request reaches the first runner');
    a.release();
    const b = await pending;
    assert.ok(closed(a));
    assert.deepEqual(paths(), ['/m/b']);
    assert.deepEqual(
      factory.open().map((r) => r.spec.modelPath),
      ['/m/b'],
    );
    b.release();
  });

  it('models on disjoint workers (or none) stay loaded together', async () => {
    const a = await acquire('/m/a', [W1]);
    const b = await acquire('/m/b', [W2]);
    const c = await acquire('/m/c', []);
    a.release();
    b.release();
    c.release();
    assert.deepEqual(paths(), ['/m/a', '/m/b', '/m/c']);
    assert.ok(!closed(a) && !closed(b) && !closed(c));
    assert.equal(factory.open().length, 3);
  });

  it('parallel loads of two models on one worker never run both runners', async () => {
    factory.hold = true;
    const pa = acquire('/m/a', [W1]);
    const pb = acquire('/m/b', [W1]);
    await flush();
    assert.equal(factory.gates.length, 1, 'the second load waits for the first to claim and finish');
    factory.gates[0].open();
    const a = await pa;
    await flush();
    assert.equal(factory.gates.length, 1, 'still waiting: the first runner is in use');
    a.release();
    await flush();
    assert.equal(factory.gates.length, 2);
    factory.gates[1].open();
    const b = await pb;
    assert.ok(closed(a));
    assert.deepEqual(paths(), ['/m/b']);
    b.release();
  });

  it('a failed load gives its workers back', async () => {
    factory.fail = new Error('load failed');
    await assert.rejects(acquire('/m/a', [W1]), /load failed/);
    factory.fail = undefined;
    const b = await acquire('/m/b', [W1]);
    assert.deepEqual(paths(), ['/m/b']);
    b.release();
  });
});
