// The SIGILL rule of ProcessRunnerFactory (docs/native.md "CPU probe"), against the fake runner process: the child
// really dies of SIGILL while loading (LLAMAD_TEST_RUNNER_SIGILL, runner-child.ts), and the factory retries it once
// with the CPU backend's extra buffer types off.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Logger, LoggerService } from '@nestjs/common';
import { lastValueFrom, toArray } from 'rxjs';
import { RunnerTerminatedError } from '../../../src/common/errors';
import { ProcessRunnerFactory, RunnerSpec } from '../../../src/runner';
import { FakeBinding } from '../../utils/fake-binding';
import { GREEDY } from '../../utils/sampling';

const CHILD = join(__dirname, '..', '..', 'utils', 'fake-runner-child.js');
const binding = new FakeBinding();

function spec(modelPath: string): RunnerSpec {
  return { modelPath, numCtx: 64, numBatch: 32, numGpu: -1, numThread: 1, numParallel: 1 };
}

/** Every line the factory and the runners log (child stderr included), to count the processes started. */
const logged: string[] = [];
const capture: LoggerService = {
  log: (m: unknown) => void logged.push(String(m)),
  warn: (m: unknown) => void logged.push(String(m)),
  error: (m: unknown) => void logged.push(String(m)),
};
const raised = () => logged.filter((l) => l.includes('raising SIGILL')).length;

async function withSigill<T>(mode: 'extra-bufts' | 'always', body: () => Promise<T>): Promise<T> {
  process.env.LLAMAD_TEST_RUNNER_SIGILL = mode;
  try {
    return await body();
  } finally {
    delete process.env.LLAMAD_TEST_RUNNER_SIGILL;
  }
}

describe('ProcessRunnerFactory: a runner that dies of SIGILL while loading', () => {
  before(() => Logger.overrideLogger(capture));
  after(() => Logger.overrideLogger(false));

  it('is retried once with extra buffer types off, and later loads skip them', async () => {
    logged.length = 0;
    const factory = new ProcessRunnerFactory(() => binding, { childPath: CHILD });
    await withSigill('extra-bufts', async () => {
      const runner = await factory.create(spec('/m/first'));
      try {
        assert.equal(raised(), 1, 'the first process died of SIGILL, the retry did not');
        assert.ok(logged.some((l) => /extra buffer types off/.test(l)));
        const events = await lastValueFrom(
          runner.generate({ tokens: [1, 2], numPredict: 4, sampling: GREEDY, stop: [] }).pipe(toArray()),
        );
        assert.equal(events.at(-1)?.kind, 'done');
      } finally {
        await runner.close();
      }
      // the child dies whenever extra buffer types are on: a second model loads at once without them
      const second = await factory.create(spec('/m/second'));
      await second.close();
      assert.equal(raised(), 1, 'no second SIGILL: the daemon keeps extra buffer types off');
    });
  });

  it('dies on both tries: the error names the CPU feature from the probe line, else the signal', async () => {
    logged.length = 0;
    const factory = new ProcessRunnerFactory(() => binding, { childPath: CHILD });
    await withSigill('always', async () => {
      await assert.rejects(factory.create(spec('/m/cpu-probe-amx')), (err: unknown) => {
        assert.ok(err instanceof RunnerTerminatedError);
        assert.equal(err.message, 'llama runner process has terminated: signal: illegal instruction (CPU feature AMX)');
        assert.equal(err.death, 'signal');
        return true;
      });
      assert.equal(raised(), 2, 'retried exactly once');
      await assert.rejects(factory.create(spec('/m/plain')), (err: unknown) => {
        assert.ok(err instanceof RunnerTerminatedError);
        assert.equal(err.message, 'llama runner process has terminated: signal: illegal instruction');
        return true;
      });
      assert.equal(raised(), 4);
    });
  });

  it('other deaths are not retried', async () => {
    logged.length = 0;
    const factory = new ProcessRunnerFactory(() => binding, { childPath: CHILD });
    await assert.rejects(factory.create(spec('/m/abort-on-load')), /GGML_ASSERT/);
    assert.equal(logged.filter((l) => /extra buffer types off/.test(l)).length, 0);
  });
});
