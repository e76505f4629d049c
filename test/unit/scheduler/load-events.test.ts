import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { Logger } from '@nestjs/common';
import { ModelLoadError } from '../../../src/common/errors';
import { DaemonConfig } from '../../../src/config';
import { InMemoryModelEvents, ModelEvent } from '../../../src/observability/model-events';
import type { Runner, RunnerCreateOptions, RunnerDeath, RunnerFactory, RunnerSpec } from '../../../src/runner';
import { SchedulerService } from '../../../src/scheduler/scheduler.service';
import { FakeRunner, spec } from '../../utils/fake-runner';
import { FakeMemory, flush, gate, Gate, MIN } from '../../utils/scheduler-fakes';

/** A FakeRunner whose process can "die". */
class MortalRunner extends FakeRunner {
  private readonly listeners: ((death: RunnerDeath) => void)[] = [];
  onDeath(listener: (death: RunnerDeath) => void): void {
    this.listeners.push(listener);
  }
  die(death: RunnerDeath): void {
    for (const l of this.listeners.splice(0)) l(death);
  }
}

/** A factory whose loads wait for the test, which reports load progress through the create options meanwhile. */
class ProgressFactory implements RunnerFactory {
  readonly loads: { spec: RunnerSpec; options: RunnerCreateOptions; gate: Gate }[] = [];
  readonly created: MortalRunner[] = [];
  fail?: Error;

  async create(s: RunnerSpec, options: RunnerCreateOptions = {}): Promise<Runner> {
    const g = gate();
    this.loads.push({ spec: s, options, gate: g });
    await g.promise;
    if (this.fail) throw this.fail;
    const runner = new MortalRunner(s);
    this.created.push(runner);
    return runner;
  }
}

describe('SchedulerService model events (load lifecycle, unload reasons, loads in flight)', () => {
  let factory: ProgressFactory;
  let bus: InMemoryModelEvents;
  let config: DaemonConfig;
  let scheduler: SchedulerService;
  let events: ModelEvent[];

  beforeEach(() => {
    Logger.overrideLogger(false);
    mock.timers.enable({ apis: ['setTimeout', 'Date'], now: Date.UTC(2026, 0, 1) });
    factory = new ProgressFactory();
    bus = new InMemoryModelEvents();
    events = [];
    bus.stream().subscribe((e) => events.push(e));
    config = Object.assign(new DaemonConfig(), { keepAliveMs: 5 * MIN, logging: false, maxLoadedModels: 1 });
    scheduler = new SchedulerService(config, factory, new FakeMemory(), undefined, bus);
  });
  afterEach(async () => {
    await scheduler.onApplicationShutdown();
    mock.timers.reset();
  });

  const summary = () => events.map((e) => [e.type, e.model, e.data ?? {}]);
  const acquire = (modelPath: string, modelName: string, keepAliveMs?: number) =>
    scheduler.acquire({ spec: spec({ modelPath }), modelName, keepAliveMs });

  it('load.start, monotone load.progress at most one per 1 % ending at 1, load.ready; listed while loading', async () => {
    const lease = acquire('/m/a', 'a:latest');
    await flush();
    assert.equal(factory.loads.length, 1);
    const report = factory.loads[0].options.onProgress!;
    assert.deepEqual(
      scheduler.loading().map((l) => [l.name, l.progress, l.spec.modelPath, l.keepAliveMs]),
      [['a:latest', 0, '/m/a', 5 * MIN]],
    );
    for (const p of [0.005, 0.3, 0.2, 0.305, 0.9]) report(p);
    assert.equal(scheduler.loading()[0].progress, 0.9);
    report(1);
    factory.loads[0].gate.open();
    (await lease).release();
    assert.deepEqual(scheduler.loading(), []);
    const ready = events.at(-1)!;
    assert.equal(ready.type, 'load.ready');
    assert.ok((ready.data!.duration_ns as number) >= 0);
    assert.deepEqual(summary().slice(0, -1), [
      ['load.start', 'a:latest', {}],
      ['load.progress', 'a:latest', { progress: 0.3 }],
      ['load.progress', 'a:latest', { progress: 0.9 }],
      ['load.progress', 'a:latest', { progress: 1 }],
    ]);
  });

  it('load.failed with the message the waiting request gets; nothing stays listed', async () => {
    factory.fail = new ModelLoadError('unable to load model: /m/a');
    const lease = acquire('/m/a', 'a:latest');
    await flush();
    factory.loads[0].gate.open();
    await assert.rejects(lease, /unable to load model/);
    assert.deepEqual(summary(), [
      ['load.start', 'a:latest', {}],
      ['load.failed', 'a:latest', { error: 'unable to load model: /m/a' }],
    ]);
    assert.deepEqual(scheduler.loading(), []);
  });

  const loaded = async (path: string, name: string, keepAliveMs?: number) => {
    const lease = acquire(path, name, keepAliveMs);
    await flush();
    factory.loads.at(-1)!.gate.open();
    return lease;
  };
  const unloads = () => events.filter((e) => e.type === 'unload').map((e) => [e.model, e.data!.reason]);

  it('unload reasons: expired (keep-alive), requested (expire), evicted (room for another), failed, shutdown', async () => {
    (await loaded('/m/a', 'a:latest', 1000)).release();
    mock.timers.tick(1000);
    await flush();
    assert.deepEqual(unloads(), [['a:latest', 'expired']]);

    (await loaded('/m/b', 'b:latest')).release();
    scheduler.expire('/m/b');
    await flush();
    assert.deepEqual(unloads().at(-1), ['b:latest', 'requested']);

    (await loaded('/m/c', 'c:latest')).release();
    (await loaded('/m/d', 'd:latest')).release(); // OLLAMA_MAX_LOADED_MODELS 1: c makes room
    assert.deepEqual(unloads().at(-1), ['c:latest', 'evicted']);

    const death: RunnerDeath = { reason: 'signal: killed', cause: 'signal' };
    factory.created.at(-1)!.die(death);
    await flush();
    assert.deepEqual(unloads().at(-1), ['d:latest', 'failed']);

    (await loaded('/m/e', 'e:latest')).release();
    await scheduler.onApplicationShutdown();
    assert.deepEqual(unloads().at(-1), ['e:latest', 'shutdown']);
    assert.equal(unloads().length, 5, 'one unload per runner');
  });
});
