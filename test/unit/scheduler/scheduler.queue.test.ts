import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { Logger } from '@nestjs/common';
import { ModelLoadError, RequestCancelledError, ServerBusyError } from '../../../src/common/errors';
import { DaemonConfig } from '../../../src/config';
import { RunnerLease, SchedulerService } from '../../../src/scheduler/scheduler.service';
import { spec } from '../../utils/fake-runner';
import { ControlledFactory, FakeMemory, flush, MIN, useScheduler } from '../../utils/scheduler-fakes';

// Split from scheduler.service.test.ts (500-line rule): the queue, the soak and withLoaded.

describe('SchedulerService', () => {
  const fx = useScheduler();

  const acquire = (modelPath: string, keepAliveMs?: number) =>
    fx.scheduler.acquire({ spec: spec({ modelPath }), keepAliveMs });

  describe('queue', () => {
    it('rejects with 503 text when OLLAMA_MAX_QUEUE requests are pending; loaded ones bypass', async () => {
      fx.config.maxQueue = 2;
      (await acquire('/m/loaded')).release();
      fx.factory.hold = true;
      const first = acquire('/m/1');
      const second = acquire('/m/2');
      await assert.rejects(acquire('/m/3'), (err: Error) => {
        assert.ok(err instanceof ServerBusyError);
        assert.equal(err.message, 'server busy, please try again.  maximum pending requests exceeded');
        return true;
      });
      (await acquire('/m/loaded')).release();
      await flush();
      fx.factory.gates[0].open();
      (await first).release();
      await flush();
      fx.factory.gates[1].open();
      (await second).release();
      assert.equal(fx.scheduler.pendingCount(), 0);
    });

    it('a caller that aborts while queued stops waiting and leaves nothing behind', async () => {
      fx.factory.hold = true;
      const loading = acquire('/m/a');
      const abort = new AbortController();
      const queued = fx.scheduler.acquire({ spec: spec({ modelPath: '/m/a', numCtx: 1024 }) }, abort.signal);
      await flush();
      assert.equal(fx.scheduler.pendingCount(), 2);
      abort.abort();
      await assert.rejects(queued, RequestCancelledError);
      assert.equal(fx.scheduler.pendingCount(), 1);
      fx.factory.gates[0].open();
      (await loading).release();
      await flush();
      assert.equal(fx.factory.requested.length, 1, 'the cancelled load never starts');
      assert.equal(fx.scheduler.pendingCount(), 0);
    });

    it('a caller that aborts during its load stops waiting; the runner idles with refCount 0', async () => {
      fx.factory.hold = true;
      const abort = new AbortController();
      const p = fx.scheduler.acquire({ spec: spec(), keepAliveMs: MIN }, abort.signal);
      await flush();
      abort.abort();
      await assert.rejects(p, RequestCancelledError);
      fx.factory.gates[0].open();
      await flush();
      assert.equal(fx.scheduler.loaded()[0].refCount, 0);
      assert.ok(fx.scheduler.loaded()[0].expiresAt);
      mock.timers.tick(MIN);
      assert.equal(fx.scheduler.loaded().length, 0);
    });

    it('an already aborted signal fails at once', async () => {
      const abort = new AbortController();
      abort.abort();
      await assert.rejects(fx.scheduler.acquire({ spec: spec() }, abort.signal), RequestCancelledError);
      assert.equal(fx.factory.requested.length, 0);
    });
  });

  it('soak: 5,000 requests over 7 models with random options, keep-alives, aborts and failures end clean', async () => {
    fx.config.maxLoadedModels = 3;
    fx.config.maxQueue = 10_000;
    fx.memory.totalBytes = 100;
    fx.memory.freeBytes = 100;
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let m = 0; m < 7; m++) fx.memory.sizes.set(`/m/${m}`, 10 + m * 5);
    const outcomes = { ok: 0, cancelled: 0, failed: 0, busy: 0 };
    const keepAlives = [undefined, 0, 1000, MIN, Infinity];
    const leases: RunnerLease[] = [];
    const all: Promise<void>[] = [];
    for (let i = 0; i < 5000; i++) {
      const abort = new AbortController();
      fx.factory.fail = rand(50) === 0 ? new ModelLoadError('flaky load') : undefined;
      const p = fx.scheduler
        .acquire(
          {
            spec: spec({ modelPath: `/m/${rand(7)}`, numCtx: rand(10) === 0 ? 1024 : 2048 }),
            keepAliveMs: keepAlives[rand(keepAlives.length)],
          },
          abort.signal,
        )
        .then(
          (lease) => {
            outcomes.ok++;
            if (rand(2) === 0) lease.release();
            else leases.push(lease);
          },
          (err: Error) => {
            if (err instanceof RequestCancelledError) outcomes.cancelled++;
            else if (err instanceof ServerBusyError) outcomes.busy++;
            else outcomes.failed++;
          },
        );
      all.push(p);
      if (rand(10) === 0) abort.abort();
      if (rand(3) === 0) {
        await flush(1);
        leases.splice(0).forEach((l) => l.release());
        mock.timers.tick(rand(2000));
      }
      fx.factory.fail = undefined;
    }
    while (fx.scheduler.pendingCount() > 0 || leases.length > 0) {
      await flush(1);
      leases.splice(0).forEach((l) => l.release());
    }
    await Promise.all(all);
    assert.equal(outcomes.ok + outcomes.cancelled + outcomes.failed + outcomes.busy, 5000);
    assert.ok(outcomes.ok > 3000, JSON.stringify(outcomes));
    assert.ok(outcomes.cancelled > 0 && outcomes.failed > 0, JSON.stringify(outcomes));
    assert.equal(outcomes.busy, 0);
    assert.equal(fx.scheduler.pendingCount(), 0);
    assert.ok(fx.scheduler.loaded().length <= 3);
    assert.ok(fx.scheduler.loaded().every((r) => r.refCount === 0));
    assert.equal(fx.factory.open().length, fx.scheduler.loaded().length, 'every evicted runner was closed');
    // Every idle runner is either forever or has a timer that fires.
    mock.timers.tick(24 * 60 * MIN);
    await flush();
    assert.ok(fx.scheduler.loaded().every((r) => r.keepAliveMs === Infinity && r.expiresAt === undefined));
    await fx.scheduler.onApplicationShutdown();
    await flush();
    assert.equal(fx.scheduler.loaded().length, 0);
    assert.equal(fx.factory.open().length, 0);
  });
});

describe('SchedulerService.withLoaded (tokenize on a loaded runner)', () => {
  it('uses the loaded runner without loading; holds it meanwhile; undefined when not loaded', async () => {
    Logger.overrideLogger(false);
    const factory = new ControlledFactory();
    const config = Object.assign(new DaemonConfig(), { keepAliveMs: 5 * MIN, logging: false });
    const scheduler = new SchedulerService(config, factory, new FakeMemory());
    try {
      assert.equal(await scheduler.withLoaded('/m/a', () => Promise.resolve(1)), undefined);
      assert.equal(factory.created.length, 0, 'nothing loaded for it');
      const lease = await scheduler.acquire({ spec: spec({ modelPath: '/m/a' }) });
      lease.release();
      const seen = await scheduler.withLoaded('/m/a', (runner) => {
        assert.equal(runner, lease.runner);
        assert.equal(scheduler.loaded()[0].refCount, 1, 'held while in use');
        return Promise.resolve(7);
      });
      assert.deepEqual(seen, { value: 7 });
      assert.equal(scheduler.loaded()[0].refCount, 0);
      assert.equal(factory.created.length, 1);
      await assert.rejects(
        scheduler.withLoaded('/m/a', () => Promise.reject(new Error('boom'))),
        /boom/,
      );
      assert.equal(scheduler.loaded()[0].refCount, 0, 'released on failure');
      scheduler.expire('/m/a');
      assert.equal(await scheduler.withLoaded('/m/a', () => Promise.resolve(1)), undefined);
    } finally {
      await scheduler.onApplicationShutdown();
    }
  });
});
