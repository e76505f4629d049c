import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Logger } from '@nestjs/common';
import { DaemonConfig } from '../../../src/config';
import type { Runner, RunnerDeath, RunnerFactory, RunnerSpec } from '../../../src/runner';
import { RunnerLifecycleEvent, SchedulerService } from '../../../src/scheduler';
import { FakeRunner, spec } from '../../utils/fake-runner';
import { FakeMemory } from '../../utils/scheduler-fakes';

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

class MortalFactory implements RunnerFactory {
  readonly created: MortalRunner[] = [];
  readonly names: (string | undefined)[] = [];
  create(s: RunnerSpec, options?: { modelName?: string }): Promise<Runner> {
    const runner = new MortalRunner(s);
    this.created.push(runner);
    this.names.push(options?.modelName);
    return Promise.resolve(runner);
  }
}

describe('SchedulerService and a runner that dies', () => {
  it('drops the dead runner at once (busy or not), then loads it afresh and counts a restart', async () => {
    Logger.overrideLogger(false);
    const factory = new MortalFactory();
    const config = Object.assign(new DaemonConfig(), { keepAliveMs: 60_000, logging: false });
    const scheduler = new SchedulerService(config, factory, new FakeMemory());
    const events: RunnerLifecycleEvent[] = [];
    scheduler.runnerEvents$.subscribe((e) => events.push(e));
    try {
      const lease = await scheduler.acquire({ spec: spec({ modelPath: '/m/bad' }), modelName: 'bad:latest' });
      const other = await scheduler.acquire({ spec: spec({ modelPath: '/m/good' }), modelName: 'good:latest' });
      assert.deepEqual(factory.names, ['bad:latest', 'good:latest']);
      factory.created[0].die({ reason: 'GGML_ASSERT(x) failed', cause: 'abort' });
      assert.deepEqual(
        scheduler.loaded().map((r) => r.spec.modelPath),
        ['/m/good'],
        'removed while still leased; its memory no longer counts',
      );
      lease.release();
      const again = await scheduler.acquire({ spec: spec({ modelPath: '/m/bad' }), modelName: 'bad:latest' });
      assert.equal(factory.created.length, 3, 'loaded afresh');
      assert.notEqual(again.runner, lease.runner);
      assert.ok((lease.runner as FakeRunner).closed, 'the dead runner was closed');
      assert.deepEqual(events, [
        { kind: 'start', model: 'bad:latest', restart: false },
        { kind: 'start', model: 'good:latest', restart: false },
        { kind: 'crash', model: 'bad:latest', cause: 'abort' },
        { kind: 'start', model: 'bad:latest', restart: true },
      ]);
      again.release();
      other.release();
    } finally {
      await scheduler.onApplicationShutdown();
    }
  });
});
