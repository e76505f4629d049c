import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { lastValueFrom, NEVER, Observable, of, throwError, toArray } from 'rxjs';
import { ModelLoadError, ServerBusyError } from '../../../src/common/errors';
import { RunnerLease, sameSpec } from '../../../src/scheduler/scheduler.service';
import { FakeRunner, spec } from '../../utils/fake-runner';
import { flush, MIN, useScheduler } from '../../utils/scheduler-fakes';

describe('SchedulerService', () => {
  const fx = useScheduler();

  const paths = () =>
    fx.scheduler
      .loaded()
      .map((r) => r.spec.modelPath)
      .sort();
  const open = (lease: RunnerLease) => !(lease.runner as FakeRunner).closed;
  const acquire = (modelPath: string, keepAliveMs?: number) =>
    fx.scheduler.acquire({ spec: spec({ modelPath }), keepAliveMs });

  describe('loading and reuse', () => {
    it('loads on first use and reuses the runner', async () => {
      const a = await acquire('/m/a');
      const b = await acquire('/m/a');
      assert.equal(fx.factory.created.length, 1);
      assert.equal(a.runner, b.runner);
      assert.ok(a.loadDurationNs > 0);
      a.release();
      b.release();
      assert.equal(fx.scheduler.loaded()[0].refCount, 0);
    });

    it('unloads a runner that reports itself broken (a lost RPC worker) once idle, and loads a fresh one next', async () => {
      const a = await acquire('/m/a');
      const b = await acquire('/m/a');
      const broken = a.runner as typeof a.runner & { broken?: () => string | undefined };
      broken.broken = () => 'rpc server 10.0.0.2:50052: connection lost';
      a.release();
      assert.deepEqual(paths(), ['/m/a'], 'still in use by b');
      b.release();
      await flush();
      assert.deepEqual(paths(), []);
      const c = await acquire('/m/a');
      assert.notEqual(c.runner, a.runner);
      assert.equal(fx.factory.created.length, 2);
      c.release();
    });

    it('loads once for concurrent first requests (one load at a time)', async () => {
      fx.factory.hold = true;
      const leases = Promise.all([1, 2, 3].map(() => acquire('/m/a')));
      await flush();
      assert.equal(fx.factory.gates.length, 1);
      fx.factory.gates[0].open();
      const got = await leases;
      assert.equal(fx.factory.created.length, 1);
      assert.equal(fx.scheduler.loaded()[0].refCount, 3);
      got.forEach((l) => l.release());
    });

    it('loads different models in parallel: a stuck load delays only its own model', async () => {
      fx.factory.hold = true;
      const a = acquire('/m/a');
      const b = acquire('/m/b');
      await flush();
      assert.equal(fx.factory.gates.length, 2, 'both loads started');
      assert.equal(fx.scheduler.pendingCount(), 2);
      fx.factory.gates[1].open();
      (await b).release();
      assert.deepEqual(paths(), ['/m/b'], 'b answered while a is still loading');
      fx.factory.gates[0].open();
      (await a).release();
      assert.deepEqual(paths(), ['/m/a', '/m/b']);
    });

    it('loads one model with other options after its current load, in the same line', async () => {
      fx.factory.hold = true;
      const first = fx.scheduler.acquire({ spec: spec({ numCtx: 2048 }) });
      const other = fx.scheduler.acquire({ spec: spec({ numCtx: 1024 }) });
      await flush();
      assert.equal(fx.factory.gates.length, 1, 'one load at a time per model');
      fx.factory.gates[0].open();
      const lease = await first;
      await flush();
      assert.equal(fx.factory.gates.length, 1, 'the reload waits for the loaded runner to drain');
      lease.release();
      await flush();
      fx.factory.gates[1].open();
      (await other).release();
      assert.deepEqual(
        fx.factory.requested.map((s) => s.numCtx),
        [2048, 1024],
      );
    });

    it('a failed load fails the requests waiting for the same load, not those for another one', async () => {
      fx.factory.hold = true;
      const first = acquire('/m/a');
      const same = acquire('/m/a');
      const other = fx.scheduler.acquire({ spec: spec({ modelPath: '/m/a', numCtx: 1024 }) });
      await flush();
      fx.factory.fail = new ModelLoadError('timed out waiting for llama runner to start - progress 0.00 - ');
      fx.factory.gates[0].fail(fx.factory.fail);
      await assert.rejects(first, { message: /^timed out waiting for llama runner to start/ });
      await assert.rejects(same, { message: /^timed out waiting for llama runner to start/ });
      fx.factory.fail = undefined;
      await flush();
      assert.equal(fx.factory.gates.length, 2, 'the other options load next');
      fx.factory.gates[1].open();
      (await other).release();
      assert.equal(fx.factory.requested.length, 2, 'the failed load was not repeated for the same spec');
      assert.equal(fx.scheduler.pendingCount(), 0);
    });

    it('bypasses the queue for a loaded compatible runner while another model loads', async () => {
      const a = await acquire('/m/a');
      fx.factory.hold = true;
      const b = acquire('/m/b');
      await flush();
      const again = await acquire('/m/a');
      assert.equal(again.runner, a.runner);
      fx.factory.gates[0].open();
      (await b).release();
      a.release();
      again.release();
    });

    it('reloads when a load-time option differs, after the old runner drains', async () => {
      const first = await fx.scheduler.acquire({ spec: spec({ numCtx: 2048 }) });
      const pending = fx.scheduler.acquire({ spec: spec({ numCtx: 1024 }) });
      await flush();
      assert.equal(fx.factory.created.length, 1, 'must wait while the old runner is in use');
      first.release();
      const second = await pending;
      assert.equal(fx.factory.created.length, 2);
      assert.equal(fx.factory.created[0].closed, true);
      assert.equal(second.runner.spec.numCtx, 1024);
      second.release();
    });

    it('reloads for num_batch, num_thread and use_mmap changes, not for num_gpu -1', async () => {
      for (const o of [{ numBatch: 256 }, { numThread: 2 }, { useMmap: false }, { numGpu: -1, useMmap: false }]) {
        (await fx.scheduler.acquire({ spec: spec(o) })).release();
      }
      assert.equal(fx.factory.created.length, 3, 'the last spec differs from the third only by num_gpu -1');
      assert.equal(fx.factory.open().length, 1);
    });

    it('propagates load errors, keeps nothing loaded and nothing pending', async () => {
      fx.factory.fail = new ModelLoadError('bad weights');
      await assert.rejects(acquire('/m/a'), { message: 'bad weights' });
      assert.equal(fx.scheduler.loaded().length, 0);
      assert.equal(fx.scheduler.pendingCount(), 0);
      fx.factory.fail = undefined;
      (await acquire('/m/a')).release();
      assert.equal(fx.scheduler.loaded().length, 1);
    });
  });

  describe('keep-alive', () => {
    it('uses OLLAMA_KEEP_ALIVE for a new load and unloads when it expires', async () => {
      const lease = await acquire('/m/a');
      mock.timers.tick(10 * MIN);
      assert.equal(fx.factory.created[0].closed, false, 'never unloads while in use');
      assert.equal(fx.scheduler.loaded()[0].expiresAt, undefined);
      lease.release();
      assert.equal(fx.scheduler.loaded()[0].expiresAt?.getTime(), Date.now() + 5 * MIN);
      mock.timers.tick(5 * MIN - 1);
      assert.equal(fx.scheduler.loaded().length, 1);
      mock.timers.tick(1);
      assert.equal(fx.scheduler.loaded().length, 0);
      await flush();
      assert.equal(fx.factory.created[0].closed, true);
    });

    it('a request’s keep_alive overwrites the runner’s; a request without one keeps it', async () => {
      (await acquire('/m/a', 30_000)).release();
      assert.equal(fx.scheduler.loaded()[0].keepAliveMs, 30_000);
      (await acquire('/m/a')).release();
      assert.equal(fx.scheduler.loaded()[0].keepAliveMs, 30_000, 'not reset to the default');
      mock.timers.tick(29_999);
      assert.equal(fx.scheduler.loaded().length, 1);
      mock.timers.tick(1);
      assert.equal(fx.scheduler.loaded().length, 0);
    });

    it('a new request stops the idle timer and the next release restarts it', async () => {
      (await acquire('/m/a', MIN)).release();
      mock.timers.tick(MIN - 10);
      const lease = await acquire('/m/a');
      mock.timers.tick(MIN);
      assert.equal(fx.scheduler.loaded().length, 1);
      lease.release();
      mock.timers.tick(MIN - 1);
      assert.equal(fx.scheduler.loaded().length, 1);
      mock.timers.tick(1);
      assert.equal(fx.scheduler.loaded().length, 0);
    });

    it('keep_alive 0 unloads as soon as idle; negative (Infinity) never expires', async () => {
      const zero = await acquire('/m/zero', 0);
      assert.equal(fx.scheduler.loaded().length, 1, 'kept while in use');
      zero.release();
      (await acquire('/m/forever', Infinity)).release();
      mock.timers.tick(400 * 24 * 60 * MIN);
      assert.deepEqual(paths(), ['/m/forever']);
      assert.equal(fx.scheduler.loaded()[0].expiresAt, undefined);
    });

    it('keeps keep-alives longer than setTimeout’s limit (re-arms in steps)', async () => {
      const days30 = 30 * 24 * 60 * MIN;
      (await acquire('/m/a', days30)).release();
      mock.timers.tick(2 ** 31 - 1);
      assert.equal(fx.scheduler.loaded().length, 1);
      mock.timers.tick(days30 - (2 ** 31 - 1));
      assert.equal(fx.scheduler.loaded().length, 0);
    });

    it('expire() unloads an idle runner now and a busy one when it is released', async () => {
      const lease = await acquire('/m/a');
      fx.scheduler.expire('/m/a');
      assert.equal(fx.scheduler.loaded().length, 1);
      const fresh = acquire('/m/a');
      await flush();
      assert.equal(fx.factory.created.length, 1, 'an expiring runner serves no new request');
      lease.release();
      (await fresh).release();
      assert.equal(fx.factory.created.length, 2);
      assert.equal(fx.factory.created[0].closed, true);
      fx.scheduler.expire('/m/not-loaded');
    });
  });

  describe('eviction', () => {
    it('caps resident models at OLLAMA_MAX_LOADED_MODELS, evicting by keep-alive then path', async () => {
      fx.config.maxLoadedModels = 2;
      (await acquire('/m/b', 10 * MIN)).release();
      (await acquire('/m/a', 10 * MIN)).release();
      (await acquire('/m/c')).release();
      assert.deepEqual(paths(), ['/m/b', '/m/c'], 'equal keep-alives: the lower path goes');
      (await acquire('/m/d', Infinity)).release();
      assert.deepEqual(paths(), ['/m/b', '/m/d'], 'the shorter keep-alive (5 m) goes first');
      (await acquire('/m/e', MIN)).release();
      assert.deepEqual(paths(), ['/m/d', '/m/e'], 'forever sorts last');
    });

    it('defaults to 3 resident models on CPU (OLLAMA_MAX_LOADED_MODELS=0)', async () => {
      for (const p of ['/m/1', '/m/2', '/m/3', '/m/4']) (await acquire(p)).release();
      assert.deepEqual(paths(), ['/m/2', '/m/3', '/m/4']);
    });

    it('evicts an idle runner before a busy one, and waits for a busy victim', async () => {
      fx.config.maxLoadedModels = 2;
      const busyA = await acquire('/m/a', MIN);
      (await acquire('/m/b', 10 * MIN)).release();
      (await acquire('/m/c')).release();
      assert.deepEqual(paths(), ['/m/a', '/m/c'], 'the idle one goes although its keep-alive is longer');
      const busyC = await acquire('/m/c');
      const d = acquire('/m/d');
      await flush();
      assert.equal(fx.factory.requested.length, 3, 'waits while every runner is busy');
      busyC.release();
      await flush();
      assert.equal(fx.factory.requested.length, 3, 'the victim is the shortest keep-alive (a, 1 m), not c');
      busyA.release();
      (await d).release();
      assert.deepEqual(paths(), ['/m/c', '/m/d']);
    });

    it('evicts when a new load would exceed 80 % of the free memory', async () => {
      fx.memory.totalBytes = 100;
      fx.memory.freeBytes = 100;
      fx.memory.sizes.set('/m/a', 50);
      fx.memory.sizes.set('/m/b', 45);
      fx.memory.sizes.set('/m/c', 20);
      fx.memory.sizes.set('/m/d', 40);
      (await acquire('/m/a')).release();
      (await acquire('/m/b')).release();
      assert.deepEqual(paths(), ['/m/b'], '45 > 0.8 × (100 − 50): a goes');
      (await acquire('/m/c')).release();
      assert.deepEqual(paths(), ['/m/b', '/m/c'], '20 ≤ 0.8 × (100 − 45): loads alongside');
      (await acquire('/m/d')).release();
      assert.deepEqual(paths(), ['/m/c', '/m/d'], '40 > 0.8 × 35: one eviction (b, by path) makes room');
      assert.equal(fx.scheduler.loaded().find((r) => r.spec.modelPath === '/m/d')?.sizeBytes, 40);
    });

    it('uses the system’s free memory when it is lower than total − loaded', async () => {
      fx.memory.totalBytes = 1000;
      fx.memory.freeBytes = 10;
      fx.memory.defaultSize = 9;
      (await acquire('/m/a')).release();
      (await acquire('/m/b')).release();
      assert.deepEqual(paths(), ['/m/b']);
    });

    it('counts loads in flight: a load that does not fit beside one waits for it, then evicts', async () => {
      fx.memory.totalBytes = 100;
      fx.memory.freeBytes = 100;
      fx.memory.sizes.set('/m/a', 50);
      fx.memory.sizes.set('/m/b', 45);
      fx.memory.sizes.set('/m/c', 10);
      fx.factory.hold = true;
      const a = acquire('/m/a');
      const b = acquire('/m/b');
      const c = acquire('/m/c');
      await flush();
      assert.deepEqual(
        fx.factory.requested.map((s) => s.modelPath),
        ['/m/a', '/m/c'],
        'b (45 > 0.8 × 50 left beside a’s reservation) waits; c (10) loads beside a',
      );
      fx.factory.gates[1].open();
      const leaseC = await c;
      await flush();
      assert.equal(open(leaseC), true, 'b never evicts a runner before its requester has it');
      assert.equal(fx.factory.requested.length, 2, 'b waits for a’s load rather than evict the busy c');
      leaseC.release();
      fx.factory.gates[0].open();
      const leaseA = await a;
      assert.equal(open(leaseA), true);
      leaseA.release();
      await flush();
      assert.deepEqual(
        fx.factory.requested.map((s) => s.modelPath),
        ['/m/a', '/m/c', '/m/b'],
      );
      fx.factory.gates[2].open();
      (await b).release();
      assert.deepEqual(paths(), ['/m/b'], 'the idle c, then a once it had loaded, were evicted to make room');
      assert.ok(fx.factory.created.filter((r) => r.spec.modelPath !== '/m/b').every((r) => r.closed));
    });

    it('counts loads in flight against OLLAMA_MAX_LOADED_MODELS', async () => {
      fx.config.maxLoadedModels = 1;
      fx.factory.hold = true;
      const a = acquire('/m/a');
      const b = acquire('/m/b');
      await flush();
      assert.equal(fx.factory.gates.length, 1, 'b waits for the load of a');
      fx.factory.gates[0].open();
      (await a).release();
      await flush();
      fx.factory.gates[1].open();
      (await b).release();
      assert.deepEqual(paths(), ['/m/b']);
    });

    it('always loads the first model, even when it does not fit', async () => {
      fx.memory.freeBytes = 1;
      fx.memory.defaultSize = 1e9;
      (await acquire('/m/a')).release();
      assert.deepEqual(paths(), ['/m/a']);
    });
  });

  describe('withRunner', () => {
    it('releases on completion, on error and on unsubscribe', async () => {
      const values = await lastValueFrom(fx.scheduler.withRunner({ spec: spec() }, () => of(1, 2)).pipe(toArray()));
      assert.deepEqual(values, [1, 2]);
      assert.equal(fx.scheduler.loaded()[0].refCount, 0);
      await assert.rejects(
        lastValueFrom(fx.scheduler.withRunner({ spec: spec() }, () => throwError(() => new Error('decode failed')))),
        { message: 'decode failed' },
      );
      assert.equal(fx.scheduler.loaded()[0].refCount, 0);
      await assert.rejects(
        lastValueFrom(
          fx.scheduler.withRunner({ spec: spec() }, (): Observable<number> => {
            throw new Error('prompt failed');
          }),
        ),
        { message: 'prompt failed' },
      );
      assert.equal(fx.scheduler.loaded()[0].refCount, 0);
      const sub = fx.scheduler.withRunner({ spec: spec() }, () => NEVER).subscribe();
      await flush();
      assert.equal(fx.scheduler.loaded()[0].refCount, 1);
      sub.unsubscribe();
      assert.equal(fx.scheduler.loaded()[0].refCount, 0);
    });

    it('unsubscribing while queued drops the request from the queue', async () => {
      fx.factory.hold = true;
      const first = fx.scheduler.withRunner({ spec: spec({ modelPath: '/m/a' }) }, () => of(1)).subscribe();
      const second = fx.scheduler
        .withRunner({ spec: spec({ modelPath: '/m/a', numCtx: 1024 }) }, () => of(1))
        .subscribe();
      await flush();
      assert.equal(fx.scheduler.pendingCount(), 2);
      second.unsubscribe();
      await flush();
      assert.equal(fx.scheduler.pendingCount(), 1);
      fx.factory.gates[0].open();
      await flush();
      assert.equal(fx.factory.requested.length, 1);
      first.unsubscribe();
      assert.equal(fx.scheduler.loaded()[0].refCount, 0);
    });
  });

  it('closes every runner on shutdown and fails queued requests', async () => {
    (await acquire('/m/1')).release();
    fx.factory.hold = true;
    const loading = acquire('/m/2');
    const queued = fx.scheduler.acquire({ spec: spec({ modelPath: '/m/2', numCtx: 1024 }) });
    await flush();
    const shutdown = fx.scheduler.onApplicationShutdown();
    await assert.rejects(queued, ServerBusyError);
    fx.factory.gates[0].open();
    await assert.rejects(loading, ServerBusyError);
    await shutdown;
    await flush();
    assert.ok(fx.factory.created.every((r) => r.closed));
    assert.equal(fx.scheduler.loaded().length, 0);
  });

  it('compares specs like Ollama’s needsReload (num_gpu -1 matches anything)', () => {
    assert.ok(sameSpec(spec(), spec({ numGpu: 0 })));
    assert.ok(!sameSpec(spec({ numGpu: 1 }), spec({ numGpu: 0 })));
    assert.ok(!sameSpec(spec(), spec({ numBatch: 256 })));
    assert.ok(!sameSpec(spec(), spec({ useMmap: false })));
    assert.ok(sameSpec(spec(), spec({ useMmap: true })));
    assert.ok(!sameSpec(spec(), spec({ numThread: 2 })));
    assert.ok(!sameSpec(spec(), spec({ numCtx: 1024 })));
  });

  it('treats another KV cache type or flash attention setting as another load', () => {
    assert.ok(sameSpec(spec(), spec({ kvCacheType: 'f16', flashAttention: 'auto' })));
    assert.ok(!sameSpec(spec({ kvCacheType: 'q8_0', flashAttention: 'on' }), spec({ flashAttention: 'on' })));
    assert.ok(
      !sameSpec(
        spec({ kvCacheType: 'q8_0', flashAttention: 'on' }),
        spec({ kvCacheType: 'q4_0', flashAttention: 'on' }),
      ),
    );
    assert.ok(!sameSpec(spec(), spec({ flashAttention: 'off' })));
    assert.ok(
      sameSpec(
        spec({ kvCacheType: 'q4_0', flashAttention: 'on' }),
        spec({ kvCacheType: 'q4_0', flashAttention: 'on' }),
      ),
    );
  });

  it('treats a model served over other RPC workers as another runner', () => {
    const workers = { rpcServers: ['10.0.0.2:50052', '10.0.0.3:50052'] };
    assert.ok(!sameSpec(spec(), spec(workers)));
    assert.ok(!sameSpec(spec(workers), spec({ rpcServers: ['10.0.0.2:50052'] })));
    assert.ok(!sameSpec(spec(workers), spec({ rpcServers: ['10.0.0.3:50052', '10.0.0.2:50052'] })));
    assert.ok(sameSpec(spec(workers), spec({ rpcServers: [...workers.rpcServers] })));
    assert.ok(sameSpec(spec(), spec({ rpcServers: [] })));
  });
});
