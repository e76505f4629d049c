import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import { ModelLoadError, RunnerTerminatedError } from '../../../src/common/errors';
import { ProcessRunner, RunnerDeath, RunnerEvent, RunnerRequest, RunnerSpec } from '../../../src/runner';
import { FakeBinding } from '../../utils/fake-binding';
import { alive, runnersOf } from '../../utils/processes';
import { GREEDY } from '../../utils/sampling';

// The watchdogs of a runner process (issue 32 item 5) against the real child code (serveRunner) over FakeBinding,
// with the child's fault hook (the load message's `fault`, LLAMAD_TEST_RUNNER_FAULT in the daemon).
const CHILD = join(__dirname, '..', '..', 'utils', 'fake-runner-child.js');
const binding = new FakeBinding();

function spec(modelPath: string): RunnerSpec {
  return { modelPath, numCtx: 64, numBatch: 32, numGpu: -1, numThread: 1, numParallel: 2 };
}

const request: RunnerRequest = { tokens: [1, 2, 3], numPredict: 8, sampling: GREEDY, stop: [] };

describe('runner process watchdogs (fake runner process)', () => {
  it('a load without progress fails with Ollama’s timeout text after OLLAMA_LOAD_TIMEOUT and its process is killed', async () => {
    const started = Date.now();
    await assert.rejects(
      ProcessRunner.start(spec('/m/good'), {
        childPath: CHILD,
        label: 'stuck',
        binding: () => binding,
        loadTimeoutMs: 400,
        fault: 'load-hang',
      }),
      (err: unknown) => {
        assert.ok(err instanceof ModelLoadError);
        assert.equal(err.message, 'timed out waiting for llama runner to start - progress 0.00 - ');
        return true;
      },
    );
    assert.ok(Date.now() - started < 10_000, 'bounded');
    assert.deepEqual(runnersOf(process.pid), [], 'the runner process is gone');
  });

  it('a runner whose engine stops progressing is killed; its stream fails with the runner error (cause hang)', async () => {
    const logged: string[] = [];
    const runner = await ProcessRunner.start(spec('/m/slow'), {
      childPath: CHILD,
      label: 'hung',
      binding: () => binding,
      heartbeatTimeoutMs: 500,
      fault: 'stall',
      log: (line) => logged.push(line),
    });
    const deaths: RunnerDeath[] = [];
    runner.onDeath((d) => deaths.push(d));
    const events: RunnerEvent[] = [];
    const err = await new Promise<unknown>((resolve) =>
      runner.generate(request).subscribe({
        next: (e) => events.push(e),
        error: resolve,
        complete: () => resolve(undefined),
      }),
    );
    assert.equal(events.length, 1, 'the first token came, then nothing');
    assert.ok(err instanceof RunnerTerminatedError);
    assert.match(
      err.message,
      /^llama runner process has terminated: the runner stopped responding \(no progress for [\d.]+ s with 1 request in flight\) and was killed$/,
    );
    await new Promise((r) => setImmediate(r));
    assert.equal(deaths.length, 1);
    assert.equal(deaths[0].cause, 'hang');
    assert.equal(alive(runner.pid!), false);
    assert.ok(logged.some((l) => l.startsWith('watchdog: the runner stopped responding')));
    await runner.close();
  });

  it('a generation that keeps producing events outlives the timeout; an idle runner is never killed', async () => {
    const runner = await ProcessRunner.start(spec('/m/slow'), {
      childPath: CHILD,
      label: 'busy',
      binding: () => binding,
      heartbeatTimeoutMs: 300,
    });
    try {
      // Pieces 20 ms apart until num_predict: a generation several times longer than the timeout.
      const started = Date.now();
      const events = await lastValueFrom(runner.generate({ ...request, numPredict: 100 }).pipe(toArray()));
      assert.equal(events.at(-1)?.kind, 'done');
      assert.ok(Date.now() - started > 3 * 300, 'the premise: the generation outlasted the timeout');
      await new Promise((r) => setTimeout(r, 800));
      assert.equal(alive(runner.pid!), true);
      assert.deepEqual(await runner.tokenize('a', { addSpecial: false, parseSpecial: false }), [97]);
    } finally {
      await runner.close();
    }
  });
});
