import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Logger } from '@nestjs/common';
import { ModelLoadError } from '../../../src/common/errors';
import { loadConfig } from '../../../src/config';
import { DefaultRunnerFactory, LlamaRunner, RunnerSpec } from '../../../src/runner';
import { FakeBinding } from '../../utils/fake-binding';

const spec: RunnerSpec = { modelPath: '/m/a', numCtx: 64, numBatch: 32, numGpu: -1, numThread: 1, numParallel: 1 };

describe('DefaultRunnerFactory (where a model runs)', () => {
  it('keeps models in-process with a stand-in binding, even in process mode', async () => {
    Logger.overrideLogger(false);
    const binding = new FakeBinding();
    const factory = new DefaultRunnerFactory('process', () => binding);
    assert.equal(factory.resolvedMode(), 'inprocess');
    const runner = await factory.create(spec);
    assert.ok(runner instanceof LlamaRunner);
    await runner.close();
    assert.equal(new DefaultRunnerFactory('inprocess', () => binding).resolvedMode(), 'inprocess');
  });

  it('a loader that throws is a ModelLoadError', async () => {
    const factory = new DefaultRunnerFactory('process', () => {
      throw new Error('native addon not found');
    });
    await assert.rejects(factory.create(spec), ModelLoadError);
  });

  it('LLAMAD_RUNNER selects the mode; process is the default', () => {
    assert.equal(loadConfig({}).runner, 'process');
    assert.equal(loadConfig({ LLAMAD_RUNNER: 'inprocess' }).runner, 'inprocess');
    assert.equal(loadConfig({ LLAMAD_RUNNER: ' In-Process ' }).runner, 'inprocess');
    assert.equal(loadConfig({ LLAMAD_RUNNER: 'bogus' }).runner, 'process');
  });
});
