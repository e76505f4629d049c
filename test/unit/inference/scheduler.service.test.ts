import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Logger } from '@nestjs/common';
import { lastValueFrom, NEVER, of, toArray } from 'rxjs';
import { ModelLoadError, ServerBusyError } from '../../../src/common/errors';
import { DaemonConfig } from '../../../src/config';
import { SchedulerService, sameSpec } from '../../../src/inference/scheduler.service';
import { FakeRunnerFactory, spec } from '../../utils/fake-runner';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SchedulerService', () => {
  let factory: FakeRunnerFactory;
  let config: DaemonConfig;
  let scheduler: SchedulerService;

  beforeEach(() => {
    Logger.overrideLogger(false);
    factory = new FakeRunnerFactory();
    config = Object.assign(new DaemonConfig(), { keepAliveMs: 60_000, logging: false });
    scheduler = new SchedulerService(config, factory);
  });

  afterEach(() => scheduler.onApplicationShutdown());

  it('loads on first use and reuses the runner', async () => {
    const a = await scheduler.acquire({ spec: spec() });
    const b = await scheduler.acquire({ spec: spec() });
    assert.equal(factory.created.length, 1);
    assert.equal(a.runner, b.runner);
    assert.ok(a.loadDurationNs > 0);
    a.release();
    b.release();
    assert.equal(scheduler.loaded()[0].refCount, 0);
  });

  it('loads once for concurrent first requests (one load at a time)', async () => {
    factory.delayMs = 20;
    const leases = await Promise.all([1, 2, 3].map(() => scheduler.acquire({ spec: spec() })));
    assert.equal(factory.created.length, 1);
    assert.equal(scheduler.loaded()[0].refCount, 3);
    leases.forEach((l) => l.release());
  });

  it('reloads when a load-time option differs, after the old runner drains', async () => {
    const first = await scheduler.acquire({ spec: spec({ numCtx: 2048 }) });
    const pending = scheduler.acquire({ spec: spec({ numCtx: 1024 }) });
    await sleep(30);
    assert.equal(factory.created.length, 1, 'must wait while the old runner is in use');
    first.release();
    const second = await pending;
    assert.equal(factory.created.length, 2);
    assert.equal(factory.created[0].closed, true);
    assert.equal(second.runner.spec.numCtx, 1024);
    second.release();
  });

  it('unloads after keep-alive once idle', async () => {
    const lease = await scheduler.acquire({ spec: spec(), keepAliveMs: 30 });
    await sleep(60);
    assert.equal(factory.created[0].closed, false, 'never unloads while in use');
    lease.release();
    assert.ok(scheduler.loaded()[0].expiresAt instanceof Date);
    await sleep(80);
    assert.equal(scheduler.loaded().length, 0);
    assert.equal(factory.created[0].closed, true);
  });

  it('keeps the runner’s keep-alive when a request does not give one', async () => {
    (await scheduler.acquire({ spec: spec(), keepAliveMs: 30 })).release();
    const again = await scheduler.acquire({ spec: spec() });
    assert.equal(scheduler.loaded()[0].keepAliveMs, 30);
    again.release();
  });

  it('unloads at once with keep_alive 0 and never with a negative one', async () => {
    (await scheduler.acquire({ spec: spec({ modelPath: '/m/zero' }), keepAliveMs: 0 })).release();
    (await scheduler.acquire({ spec: spec({ modelPath: '/m/forever' }), keepAliveMs: Infinity })).release();
    await sleep(10);
    assert.deepEqual(
      scheduler.loaded().map((r) => r.spec.modelPath),
      ['/m/forever'],
    );
    assert.equal(scheduler.loaded()[0].expiresAt, undefined);
  });

  it('expire() unloads an idle runner now and a busy one when it is released', async () => {
    const lease = await scheduler.acquire({ spec: spec() });
    scheduler.expire('/m/a');
    assert.equal(scheduler.loaded().length, 1);
    lease.release();
    assert.equal(scheduler.loaded().length, 0);
    scheduler.expire('/m/not-loaded');
  });

  it('rejects with ServerBusyError when OLLAMA_MAX_QUEUE loads are pending', async () => {
    config.maxQueue = 1;
    factory.delayMs = 30;
    const first = scheduler.acquire({ spec: spec({ modelPath: '/m/1' }) });
    await assert.rejects(scheduler.acquire({ spec: spec({ modelPath: '/m/2' }) }), ServerBusyError);
    (await first).release();
  });

  it('propagates load errors and keeps nothing loaded', async () => {
    factory.fail = new ModelLoadError('bad weights');
    await assert.rejects(scheduler.acquire({ spec: spec() }), { message: 'bad weights' });
    assert.equal(scheduler.loaded().length, 0);
    factory.fail = undefined;
    (await scheduler.acquire({ spec: spec() })).release();
    assert.equal(scheduler.loaded().length, 1);
  });

  it('withRunner releases on completion and on unsubscribe', async () => {
    const values = await lastValueFrom(scheduler.withRunner({ spec: spec() }, () => of(1, 2)).pipe(toArray()));
    assert.deepEqual(values, [1, 2]);
    assert.equal(scheduler.loaded()[0].refCount, 0);
    const sub = scheduler.withRunner({ spec: spec() }, () => NEVER).subscribe();
    await sleep(5);
    assert.equal(scheduler.loaded()[0].refCount, 1);
    sub.unsubscribe();
    assert.equal(scheduler.loaded()[0].refCount, 0);
  });

  it('closes every runner on shutdown', async () => {
    (await scheduler.acquire({ spec: spec({ modelPath: '/m/1' }) })).release();
    (await scheduler.acquire({ spec: spec({ modelPath: '/m/2' }) })).release();
    await scheduler.onApplicationShutdown();
    assert.ok(factory.created.every((r) => r.closed));
    assert.equal(scheduler.loaded().length, 0);
  });

  it('compares specs like Ollama’s needsReload (num_gpu -1 matches anything)', () => {
    assert.ok(sameSpec(spec(), spec({ numGpu: 0 })));
    assert.ok(!sameSpec(spec(), spec({ numBatch: 256 })));
    assert.ok(!sameSpec(spec(), spec({ useMmap: false })));
    assert.ok(!sameSpec(spec(), spec({ numThread: 2 })));
  });
});
