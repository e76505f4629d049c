import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Logger } from '@nestjs/common';
import { firstValueFrom, lastValueFrom, toArray } from 'rxjs';
import {
  ContextLengthExceededError,
  InternalError,
  InvalidRequestError,
  RequestCancelledError,
  RunnerTerminatedError,
} from '../../../src/common/errors';
import {
  physicalCores,
  ProcessRunner,
  ProcessRunnerFactory,
  RunnerDeath,
  RunnerRequest,
  RunnerSpec,
} from '../../../src/runner';
import { FakeBinding } from '../../utils/fake-binding';
import { alive } from '../../utils/processes';
import { GREEDY } from '../../utils/sampling';

const CHILD = join(__dirname, '..', '..', 'utils', 'fake-runner-child.js');
const binding = new FakeBinding();

function spec(modelPath: string): RunnerSpec {
  return { modelPath, numCtx: 64, numBatch: 32, numGpu: -1, numThread: 1, numParallel: 2 };
}

function start(modelPath: string): Promise<ProcessRunner> {
  return ProcessRunner.start(spec(modelPath), { childPath: CHILD, label: modelPath, binding: () => binding });
}

const SAMPLING: RunnerRequest['sampling'] = { ...GREEDY, topK: 40, topP: 0.9, seed: 42 };
const request = (tokens = [1, 2, 3]): RunnerRequest => ({ tokens, numPredict: 8, sampling: SAMPLING, stop: [] });

describe('ProcessRunner (against a fake runner process)', () => {
  it('loads, answers the Runner calls over IPC and closes the process', async () => {
    const runner = await start('/m/good');
    try {
      assert.equal(runner.slotContext, 64);
      assert.equal(runner.info.bos, 1);
      assert.deepEqual(runner.chatCapabilities(), { tools: true, thinking: false });
      assert.deepEqual(await runner.tokenize('hi', { addSpecial: true, parseSpecial: false }), [1, 104, 105]);
      assert.equal(typeof (await runner.detokenize([104, 105])), 'string');
      assert.match(
        await runner.applyChatTemplate([{ role: 'user', content: 'x' }], { addGenerationPrompt: true }),
        /<\|im_start\|>assistant/,
      );
      const events = await lastValueFrom(runner.generate(request()).pipe(toArray()));
      assert.deepEqual(
        events.filter((e) => e.kind === 'token').map((e) => e.text),
        ['Hello', ',', ' world'],
      );
      assert.equal(events.at(-1)?.kind, 'done');
      assert.equal(runner.usage().slotsBusy, 0);
      assert.ok(runner.memory().totalBytes > 0, 'memory snapshot from the child');
      const vectors = await runner.embed([[5, 6, 7]]);
      assert.ok(vectors[0] instanceof Float32Array, 'embeddings cross as Float32Array');
      assert.equal(vectors[0].length, 8);
      assert.equal((await runner.jsonSchemaToGrammar('{"type":"string"}')).length > 0, true, 'converted in the child');
      await assert.rejects(runner.jsonSchemaToGrammar('{nope'), InvalidRequestError);
      // A Ctrl-C reaches the whole process group: the runner ignores it (the daemon decides when it ends).
      process.kill(runner.pid!, 'SIGINT');
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(await runner.tokenize('a', { addSpecial: false, parseSpecial: false }), [97]);
    } finally {
      await runner.close();
    }
    assert.equal(alive(runner.pid!), false, 'the runner process exited');
    await assert.rejects(runner.tokenize('x', { addSpecial: false, parseSpecial: false }), InternalError);
  });

  it('renderChat uses a vocab-only model in the daemon that close() frees; after close it is refused', async () => {
    const own = new FakeBinding();
    const runner = await ProcessRunner.start(spec('/m/vocab'), {
      childPath: CHILD,
      label: 'vocab',
      binding: () => own,
    });
    const request = { messages: [{ role: 'user', content: 'hi' }], addGenerationPrompt: true };
    assert.match((await runner.renderChat(request)).prompt, /hi/);
    assert.equal(own.models.length, 1);
    await runner.close();
    assert.equal(own.models[0].disposed, true, 'the vocab-only model is freed');
    await assert.rejects(runner.renderChat(request), InternalError);
    assert.equal(own.models.length, 1, 'no model is loaded after close');
  });

  it('loads with the daemon’s thread share and takes a new one through the threads message', async () => {
    const runner = await ProcessRunner.start(
      { ...spec('/m/threads'), numThread: 0, numParallel: 4, kvUnified: true },
      { childPath: CHILD, label: '/m/threads', binding: () => binding, threads: 1 },
    );
    try {
      assert.equal(runner.usage().threads, 1);
      assert.equal(runner.usage().kvCellsTotal, 64, 'num_ctx shared by the 4 slots');
      runner.setThreads(physicalCores());
      await runner.tokenize('hi', { addSpecial: true, parseSpecial: false }); // a call result carries a snapshot
      assert.equal(runner.usage().threads, physicalCores());
    } finally {
      await runner.close();
    }
  });

  it('rebuilds domain errors; unsubscribing and aborting cancel in the child', async () => {
    const runner = await start('/m/slow-embed-invalid');
    try {
      await assert.rejects(lastValueFrom(runner.generate(request())), InvalidRequestError);
      await assert.rejects(lastValueFrom(runner.generate(request(Array(70).fill(3)))), ContextLengthExceededError);
      const abort = new AbortController();
      const pending = runner.embed([[1, 2]], abort.signal);
      setTimeout(() => abort.abort(), 50);
      const started = Date.now();
      await assert.rejects(pending, RequestCancelledError);
      assert.ok(Date.now() - started < 2000, 'cancelled long before the 5 s job ends');
    } finally {
      await runner.close();
    }
  });

  it('a stream unsubscribed mid-way frees its slot in the child, and the parent sees it once the engine did', async () => {
    const runner = await start('/m/slow');
    try {
      const first = await firstValueFrom(runner.generate(request()));
      assert.equal(first.kind, 'token');
      assert.equal(runner.usage().slotsBusy, 1);
      // The fake engine frees the slot 50 ms after the cancel, after the child's own flush of the cancel; no other
      // event follows, so only the snapshot sent when the task ended can bring the news.
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(runner.usage().slotsBusy, 0);
      assert.equal(runner.usage().queuedTasks, 0);
      assert.equal(runner.usage().kvCellsUsed, 0);
    } finally {
      await runner.close();
    }
  });

  it('an abort in the child fails the requests in flight with Ollama text and reports the death once', async () => {
    const logged: string[] = [];
    const runner = await ProcessRunner.start(spec('/m/abort-on-decode'), {
      childPath: CHILD,
      label: 'bad',
      binding: () => binding,
      log: (line) => logged.push(line),
    });
    const deaths: RunnerDeath[] = [];
    runner.onDeath((d) => deaths.push(d));
    await assert.rejects(lastValueFrom(runner.generate(request())), (err: unknown) => {
      assert.ok(err instanceof RunnerTerminatedError);
      assert.equal(err.message, 'llama runner process has terminated: GGML_ASSERT(ggml_can_mul_mat(k, q)) failed');
      return true;
    });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(deaths, [{ reason: 'GGML_ASSERT(ggml_can_mul_mat(k, q)) failed', cause: 'abort' }]);
    assert.ok(runner.diedEarly());
    assert.ok(
      logged.some((l) => l.endsWith('GGML_ASSERT(ggml_can_mul_mat(k, q)) failed')),
      'stderr lines go to the log',
    );
    assert.match(runner.broken() ?? '', /terminated/);
    await assert.rejects(runner.tokenize('x', { addSpecial: false, parseSpecial: false }), RunnerTerminatedError);
    assert.equal(runner.memory().totalBytes, 0);
    await runner.close();
  });

  it('kill -9 mid-stream ends the stream with `signal: killed`; an exit status reads `exit status N`', async () => {
    const runner = await start('/m/slow');
    const events: string[] = [];
    const done = new Promise<unknown>((resolve) =>
      runner.generate(request()).subscribe({
        next: (e) => events.push(e.kind),
        error: (err: unknown) => resolve(err),
        complete: () => resolve(undefined),
      }),
    );
    while (events.length < 3) await new Promise((r) => setTimeout(r, 10));
    process.kill(runner.pid!, 'SIGKILL');
    const err = await done;
    assert.ok(err instanceof RunnerTerminatedError);
    assert.equal(err.message, 'llama runner process has terminated: signal: killed');

    const exiting = await start('/m/exit-3-on-decode');
    await assert.rejects(
      lastValueFrom(exiting.generate(request())),
      (err: unknown) =>
        err instanceof RunnerTerminatedError && err.message === 'llama runner process has terminated: exit status 3',
    );
  });

  it('the factory refuses a model at once after three early deaths within a minute', async () => {
    Logger.overrideLogger(false);
    let now = 1_000_000;
    const factory = new ProcessRunnerFactory(() => binding, { childPath: CHILD, now: () => now });
    for (let i = 0; i < 3; i++) {
      await assert.rejects(factory.create(spec('/m/abort-on-load')), (err: unknown) => {
        assert.ok(err instanceof RunnerTerminatedError);
        assert.equal(err.death, 'abort');
        assert.match(err.message, /GGML_ASSERT/);
        return true;
      });
      now += 1000;
    }
    const started = Date.now();
    await assert.rejects(factory.create(spec('/m/abort-on-load')), /llama runner process has terminated: GGML_ASSERT/);
    assert.ok(Date.now() - started < 50, 'answered without starting a process');
    const good = await factory.create(spec('/m/good'));
    await good.close();
    now += 61_000;
    await assert.rejects(factory.create(spec('/m/abort-on-load')), (err: unknown) => {
      assert.ok(err instanceof RunnerTerminatedError && err.death === 'abort', 'started again after the back-off');
      return true;
    });
  });

  it('the runner process exits when its parent is killed with SIGKILL', async () => {
    const script = [
      `const { ProcessRunner } = require(${JSON.stringify(join(__dirname, '..', '..', '..', 'src', 'runner'))});`,
      `ProcessRunner.start({ modelPath: '/m/good', numCtx: 64, numBatch: 32, numGpu: -1, numThread: 1, numParallel: 1 },`,
      `  { childPath: ${JSON.stringify(CHILD)}, label: 'x', binding: () => ({}) })`,
      `  .then((r) => console.log(String(r.pid)));`,
      `setInterval(() => {}, 1000);`,
    ].join('\n');
    const parent = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pid = await new Promise<number>((resolve) =>
      parent.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))),
    );
    assert.ok(alive(pid));
    parent.kill('SIGKILL');
    const deadline = Date.now() + 5000;
    while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(alive(pid), false, 'no orphaned runner');
  });
});
