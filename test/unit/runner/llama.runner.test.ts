import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { lastValueFrom, take, toArray } from 'rxjs';
import {
  ContextLengthExceededError,
  InternalError,
  ModelLoadError,
  RequestCancelledError,
} from '../../../src/common/errors';
import { physicalCores } from '../../../src/runner/cpu-threads';
import { LlamaRunner } from '../../../src/runner/llama.runner';
import { LlamaRunnerFactory } from '../../../src/runner/llama-runner.factory';
import { RunnerEvent, RunnerRequest } from '../../../src/runner/runner';
import { FakeBinding, nativeError } from '../../utils/fake-binding';
import { spec } from '../../utils/fake-runner';
import { GREEDY } from '../../utils/sampling';

const request = (overrides: Partial<RunnerRequest> = {}): RunnerRequest => ({
  tokens: [1, 2, 3],
  numPredict: -1,
  stop: [],
  sampling: { ...GREEDY, topK: 40, topP: 0.9, seed: 42 },
  ...overrides,
});

describe('LlamaRunner over the binding', () => {
  let binding: FakeBinding;

  beforeEach(() => {
    binding = new FakeBinding();
  });

  it('creates one context with numCtx × numParallel and the slot count', async () => {
    const runner = await LlamaRunner.load(binding, spec({ numCtx: 1024, numParallel: 3, numBatch: 256, numThread: 2 }));
    assert.deepEqual(binding.contextParams[0], { nCtx: 3072, nBatch: 256, nParallel: 3, nThreads: 2 });
    assert.equal(runner.slotContext, 1024);
    assert.equal(runner.info.trainContext, 2048);
    assert.equal(runner.info.hasChatTemplate, true);
    await runner.close();
    assert.equal(binding.contexts[0].disposed, true);
    assert.equal(binding.models[0].disposed, true);
  });

  it('shares numCtx cells between the slots with kvUnified, and takes the scheduler’s thread share', async () => {
    const runner = await LlamaRunner.load(
      binding,
      spec({ numCtx: 1024, numParallel: 4, kvUnified: true, numBatch: 256 }),
      1,
    );
    assert.deepEqual(binding.contextParams[0], {
      nCtx: 1024,
      nBatch: 256,
      nParallel: 4,
      kvUnified: true,
      nThreads: 1,
      nThreadsMax: physicalCores(),
    });
    assert.equal(runner.slotContext, 1024);
    const usage = runner.usage();
    assert.equal(usage.kvCellsTotal, 1024);
    assert.equal(usage.threads, 1);
    runner.setThreads(physicalCores());
    assert.equal(runner.usage().threads, physicalCores());
    await runner.close();
  });

  it('gives the generation context the host-RAM prompt cache of the spec, and reports it in usage()', async () => {
    const runner = await LlamaRunner.load(binding, spec({ numThread: 2, cacheRamBytes: 64 * 2 ** 20 }));
    assert.equal(binding.contextParams[0].cacheRamBytes, 64 * 2 ** 20);
    assert.deepEqual(runner.usage().ramCache, { entries: 0, bytes: 0, hits: 0, tokens: 0 });
    await runner.close();
    const off = await LlamaRunner.load(binding, spec({ numThread: 2, cacheRamBytes: 0 }));
    assert.equal('cacheRamBytes' in binding.contextParams[1], false);
    assert.equal(off.usage().ramCache, undefined);
    await off.close();
  });

  it('relays token events and maps done reasons', async () => {
    const runner = await LlamaRunner.load(binding, spec());
    for (const [native, domain] of [
      ['eog', 'stop'],
      ['stop', 'stop'],
      ['length', 'length'],
    ] as const) {
      binding.script = () => ({ pieces: ['a', 'b'], reason: native });
      const events = await lastValueFrom(runner.generate(request()).pipe(toArray()));
      assert.deepEqual(events, [
        { kind: 'token', text: 'a', token: 1000 },
        { kind: 'token', text: 'b', token: 1001 },
        {
          kind: 'done',
          reason: domain,
          timings: {
            promptEvalCount: 3,
            promptCachedCount: 0,
            promptEvalDurationNs: 1_000_000,
            evalCount: 2,
            evalDurationNs: 4_000_000,
          },
        },
      ] satisfies RunnerEvent[]);
    }
    assert.equal(binding.submitted[0].sampling.seed, 42);
    assert.deepEqual(Array.from(binding.submitted[0].tokens), [1, 2, 3]);
    await runner.close();
  });

  it('turns native error events and submit errors into domain errors', async () => {
    const runner = await LlamaRunner.load(binding, spec({ numCtx: 8 }));
    binding.script = () => ({
      pieces: ['x'],
      error: { code: 'LLAMA_DECODE_FAILED', message: 'llama_decode returned -1' },
    });
    await assert.rejects(lastValueFrom(runner.generate(request())), (err: unknown) => {
      assert.ok(err instanceof InternalError);
      assert.equal(err.message, 'an error was encountered while running the model: llama_decode returned -1');
      return true;
    });
    await assert.rejects(
      lastValueFrom(runner.generate(request({ tokens: Array.from({ length: 20 }, () => 5) }))),
      ContextLengthExceededError,
    );
    await runner.close();
  });

  it('cancels the native task when unsubscribed, freeing the slot', async () => {
    const runner = await LlamaRunner.load(binding, spec());
    binding.script = () => ({ pieces: Array.from({ length: 100 }, () => 'x'), delayMs: 2 });
    const first = await lastValueFrom(runner.generate(request()).pipe(take(2), toArray()));
    assert.equal(first.length, 2);
    assert.deepEqual(binding.cancelled, [1]);
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(binding.activeTasks(), 0);
    await runner.close();
  });

  it('reports a cancel it did not ask for (e.g. unload) as RequestCancelledError', async () => {
    const runner = await LlamaRunner.load(binding, spec());
    binding.script = () => ({ pieces: Array.from({ length: 100 }, () => 'x'), delayMs: 5 });
    const result = lastValueFrom(runner.generate(request()));
    await new Promise((r) => setTimeout(r, 10));
    await runner.close();
    await assert.rejects(result, RequestCancelledError);
  });

  it('fails loads with ModelLoadError, also when the addon is missing', async () => {
    binding.loadError = nativeError('LLAMA_MODEL_LOAD_FAILED', 'unknown model architecture');
    await assert.rejects(LlamaRunner.load(binding, spec()), (err: unknown) => {
      assert.ok(err instanceof ModelLoadError);
      assert.equal(err.message, 'unknown model architecture');
      return true;
    });
    binding.loadError = undefined;
    binding.contextError = nativeError('LLAMA_CONTEXT_CREATE_FAILED', 'failed to create context');
    await assert.rejects(LlamaRunner.load(binding, spec()), ModelLoadError);
    assert.equal(binding.models[1].disposed, true, 'the model is freed when its context fails');

    const factory = new LlamaRunnerFactory(() => {
      throw new Error('native addon not found: build it with `npm run build:native`');
    });
    await assert.rejects(factory.create(spec()), (err: unknown) => {
      assert.ok(err instanceof ModelLoadError);
      assert.match(err.message, /native addon not found/);
      return true;
    });
  });
});
