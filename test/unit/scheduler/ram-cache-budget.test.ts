import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Logger } from '@nestjs/common';
import { ModelLoadError } from '../../../src/common/errors';
import { DaemonConfig } from '../../../src/config';
import { RamCacheBudget, ramCacheShareBytes, SchedulerService } from '../../../src/scheduler';
import { spec } from '../../utils/fake-runner';
import { ControlledFactory, FakeMemory, flush } from '../../utils/scheduler-fakes';

const MIB = 2 ** 20;

describe('ramCacheShareBytes', () => {
  it('splits the daemon-wide budget by the most models loaded at once (3 when unset)', () => {
    assert.equal(ramCacheShareBytes({ cacheRamMiB: 3, maxLoadedModels: 0 }), MIB);
    assert.equal(ramCacheShareBytes({ cacheRamMiB: 3, maxLoadedModels: 2 }), 1.5 * MIB);
    assert.equal(ramCacheShareBytes({ cacheRamMiB: 3, maxLoadedModels: 1 }), 3 * MIB);
    assert.equal(ramCacheShareBytes({ cacheRamMiB: 1, maxLoadedModels: 3 }), Math.floor(MIB / 3));
    assert.equal(ramCacheShareBytes({ cacheRamMiB: 0, maxLoadedModels: 0 }), 0);
  });
});

describe('RamCacheBudget', () => {
  it('grants what a spec asks for while the budget lasts, then the rest, then nothing', () => {
    const budget = new RamCacheBudget(5 * MIB);
    const asked = spec({ cacheRamBytes: 2 * MIB });
    const a = budget.reserve(asked);
    assert.equal(a.bytes, 2 * MIB);
    assert.equal(a.spec, asked, 'the spec itself when it gets all it asked for');
    assert.equal(budget.reserve(asked).bytes, 2 * MIB);
    const c = budget.reserve(asked);
    assert.equal(c.bytes, MIB);
    assert.equal(c.spec.cacheRamBytes, MIB);
    assert.equal(asked.cacheRamBytes, 2 * MIB, 'the request spec is not changed');
    const d = budget.reserve(asked);
    assert.equal(d.bytes, 0);
    assert.equal('cacheRamBytes' in d.spec, false, 'no grant: the cache is off for that runner');
    assert.equal(budget.reservedBytes(), 5 * MIB);
    budget.release(a.bytes);
    assert.equal(budget.reservedBytes(), 3 * MIB);
    assert.equal(budget.reserve(asked).bytes, 2 * MIB);
  });

  it('a spec without a cache reserves nothing; a budget of 0 grants nothing', () => {
    const plain = spec();
    assert.deepEqual(new RamCacheBudget(MIB).reserve(plain), { spec: plain, bytes: 0 });
    const off = new RamCacheBudget(0).reserve(spec({ cacheRamBytes: MIB }));
    assert.equal(off.bytes, 0);
    assert.equal(off.spec.cacheRamBytes, undefined);
  });

  it('never holds more than the budget over any sequence of reserves and releases', () => {
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const budget = new RamCacheBudget(10 * MIB);
    const held: number[] = [];
    for (let step = 0; step < 2000; step++) {
      if (held.length > 0 && rand(3) === 0) budget.release(held.splice(rand(held.length), 1)[0]);
      else held.push(budget.reserve(spec({ cacheRamBytes: rand(6 * MIB) })).bytes);
      const sum = held.reduce((a, b) => a + b, 0);
      assert.equal(budget.reservedBytes(), sum);
      assert.ok(sum <= 10 * MIB, `step ${step}: ${sum}`);
    }
  });
});

describe('SchedulerService: the host-RAM cache budget over loaded runners', () => {
  let factory: ControlledFactory;
  let memory: FakeMemory;
  let scheduler: SchedulerService;

  const start = (config: Partial<DaemonConfig>) => {
    factory = new ControlledFactory();
    memory = new FakeMemory();
    scheduler = new SchedulerService(
      Object.assign(new DaemonConfig(), { keepAliveMs: 60_000, logging: false }, config),
      factory,
      memory,
    );
  };
  const grants = () =>
    scheduler
      .loaded()
      .map((r) => [r.spec.modelPath, r.spec.cacheRamBytes] as const)
      .sort();
  const use = async (modelPath: string, cacheRamBytes: number) => {
    const lease = await scheduler.acquire({ spec: spec({ modelPath, cacheRamBytes }) });
    lease.release();
    return lease.runner;
  };

  beforeEach(() => Logger.overrideLogger(false));
  afterEach(() => scheduler.onApplicationShutdown());

  it('each model loads with its share; the shares of the loaded models never add up to more than the budget', async () => {
    start({ cacheRamMiB: 3 });
    const share = ramCacheShareBytes({ cacheRamMiB: 3, maxLoadedModels: 0 });
    for (const path of ['/m/a', '/m/b', '/m/c', '/m/d', '/m/a']) {
      await use(path, share);
      await flush();
      const sum = scheduler.loaded().reduce((n, r) => n + (r.spec.cacheRamBytes ?? 0), 0);
      assert.ok(sum <= 3 * MIB, `${sum} after ${path}`);
    }
    assert.ok(factory.requested.every((s) => s.cacheRamBytes === share));
    assert.equal(scheduler.loaded().length, 3);
  });

  it('a load gets what is left when the budget is short, and the full ask once a runner has unloaded', async () => {
    start({ cacheRamMiB: 3 });
    await use('/m/a', 2 * MIB);
    const b = await use('/m/b', 2 * MIB);
    await use('/m/c', 2 * MIB);
    assert.deepEqual(grants(), [
      ['/m/a', 2 * MIB],
      ['/m/b', MIB],
      ['/m/c', undefined],
    ]);
    assert.equal(await use('/m/b', 2 * MIB), b, 'a smaller grant does not force a reload');
    scheduler.expire('/m/a');
    await flush();
    scheduler.expire('/m/c');
    await flush();
    await use('/m/d', 2 * MIB);
    assert.deepEqual(grants(), [
      ['/m/b', MIB],
      ['/m/d', 2 * MIB],
    ]);
  });

  it('a failed load gives its grant back', async () => {
    start({ cacheRamMiB: 2 });
    factory.fail = new ModelLoadError('unable to load model: /m/a');
    await assert.rejects(scheduler.acquire({ spec: spec({ modelPath: '/m/a', cacheRamBytes: 2 * MIB }) }));
    factory.fail = undefined;
    await use('/m/b', 2 * MIB);
    assert.deepEqual(grants(), [['/m/b', 2 * MIB]]);
  });

  it('LLAMAD_CACHE_RAM=0 loads every model without the cache', async () => {
    start({ cacheRamMiB: 0 });
    await use('/m/a', MIB);
    assert.deepEqual(grants(), [['/m/a', undefined]]);
  });
});
