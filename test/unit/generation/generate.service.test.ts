import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { lastValueFrom, take, toArray } from 'rxjs';
import {
  InternalError,
  InvalidRequestError,
  ModelNotFoundError,
  UnsupportedCapabilityError,
} from '../../../src/common/errors';
import { GenerateCommand, GenerationEvent } from '../../../src/generation/generation.types';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

const command = (overrides: Partial<GenerateCommand> = {}): GenerateCommand => ({
  model: 'tiny',
  prompt: 'Hi',
  raw: false,
  options: {},
  startedAt: process.hrtime.bigint(),
  ...overrides,
});

/** Decodes FakeBinding tokens (char codes, BOS = 1) back to text. */
const text = (tokens: ArrayLike<number>) => String.fromCharCode(...Array.from(tokens).filter((t) => t !== 1));

describe('GenerateService', () => {
  let bed: InferenceTestbed;

  beforeEach(async () => {
    bed = await createInferenceTestbed({ config: { contextLength: 256 } });
    await bed.createModel('tiny', 'SYSTEM Be brief.\nPARAMETER temperature 0\nPARAMETER stop END');
  });

  afterEach(() => bed.close());

  const run = (cmd: GenerateCommand) => lastValueFrom(bed.generate.generate(cmd).pipe(toArray()));

  it('streams deltas then one done with metrics and context', async () => {
    const events = await run(command());
    assert.deepEqual(
      events.slice(0, 3),
      ['Hello', ',', ' world'].map((t) => ({ kind: 'delta', text: t })),
    );
    const done = events[3] as Extract<GenerationEvent, { kind: 'done' }>;
    assert.equal(events.length, 4);
    assert.equal(done.kind, 'done');
    assert.equal(done.reason, 'stop');
    const m = done.metrics!;
    assert.equal(m.evalCount, 3);
    assert.equal(m.evalDurationNs, 6_000_000);
    assert.equal(m.promptEvalDurationNs, 1_000_000);
    assert.ok(m.loadDurationNs > 0 && m.totalDurationNs >= m.loadDurationNs);
    const submitted = bed.binding.submitted[0];
    assert.equal(m.promptEvalCount, submitted.tokens.length);
    assert.deepEqual(done.context, [...Array.from(submitted.tokens), 1000, 1001, 1002]);
  });

  it('renders [system, user] with the chat template and applies Modelfile parameters', async () => {
    await run(command());
    const task = bed.binding.submitted[0];
    assert.equal(task.tokens[0], 1, 'BOS added once');
    assert.equal(
      text(task.tokens),
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
    );
    assert.equal(task.sampling.temperature, 0);
    assert.deepEqual(task.stop, ['END']);
    assert.equal(bed.binding.contextParams[0].nCtx, 256);
  });

  it('lets the request system and options win', async () => {
    await run(command({ system: 'Other.', options: { temperature: 0.3, num_predict: 2, seed: 7 } }));
    const task = bed.binding.submitted[0];
    assert.match(text(task.tokens), /^<\|im_start\|>system\nOther\.<\|im_end\|>/);
    assert.equal(task.sampling.temperature, 0.3);
    assert.equal(task.sampling.seed, 7);
    assert.equal(task.nPredict, 2);
  });

  it('asks for context shift by default with num_keep 4; shift false and num_keep reach the task', async () => {
    await run(command());
    assert.equal(bed.binding.submitted[0].contextShift, true);
    assert.equal(bed.binding.submitted[0].nKeep, 4);
    await run(command({ shift: false, options: { num_keep: 9 } }));
    assert.equal(bed.binding.submitted[1].contextShift, false);
    assert.equal(bed.binding.submitted[1].nKeep, 9);
  });

  it('maps native length to done_reason length', async () => {
    const events = await run(command({ options: { num_predict: 2 } }));
    assert.equal(events.length, 3);
    assert.equal((events[2] as { reason: string }).reason, 'length');
  });

  it('sends raw prompts verbatim and returns no context', async () => {
    const events = await run(command({ raw: true, prompt: '<|im_start|>x' }));
    assert.equal(text(bed.binding.submitted[0].tokens), '<|im_start|>x');
    assert.equal((events.at(-1) as { context?: number[] }).context, undefined);
  });

  it('prepends a deprecated context and skips the Modelfile messages then', async () => {
    await run(command({ context: [65, 66] }));
    assert.match(text(bed.binding.submitted[0].tokens), /^AB<\|im_start\|>system/);
  });

  it('answers an empty prompt with the load shortcut, keep_alive 0 with unload', async () => {
    assert.deepEqual(await run(command({ prompt: '' })), [{ kind: 'done', reason: 'load' }]);
    assert.equal(bed.scheduler.loaded().length, 1);
    assert.deepEqual(await run(command({ prompt: '', keepAliveMs: 0 })), [{ kind: 'done', reason: 'unload' }]);
    assert.equal(bed.scheduler.loaded().length, 0);
    assert.equal(bed.binding.submitted.length, 0);
  });

  it('truncates a prompt longer than the slot, keeping num_keep tokens', async () => {
    await run(command({ raw: true, prompt: 'x'.repeat(600), options: { num_ctx: 64, num_keep: 4 } }));
    const tokens = bed.binding.submitted[0].tokens;
    assert.ok(tokens.length < 64, `got ${tokens.length}`);
    assert.equal(tokens[0], 1);
  });

  it('fails like Ollama before streaming', async () => {
    await assert.rejects(
      run(command({ model: '' })),
      (e: unknown) => e instanceof ModelNotFoundError && e.message === "model '' not found",
    );
    await assert.rejects(
      run(command({ model: 'nope' })),
      (e: unknown) => e instanceof ModelNotFoundError && e.message === "model 'nope' not found",
    );
    await assert.rejects(
      run(command({ model: 'bad name' })),
      (e: unknown) => e instanceof InvalidRequestError && e.message === 'invalid model name',
    );
    await assert.rejects(
      run(command({ raw: true, system: 'x' })),
      (e: unknown) =>
        e instanceof InvalidRequestError && e.message === 'raw mode does not support template, system, or context',
    );
    await assert.rejects(
      run(command({ think: true })),
      (e: unknown) => e instanceof UnsupportedCapabilityError && e.message === '"tiny" does not support thinking',
    );
    await assert.rejects(
      run(command({ suffix: 'tail' })),
      (e: unknown) =>
        e instanceof UnsupportedCapabilityError &&
        e.message === 'registry.ollama.ai/library/tiny:latest does not support insert',
    );
    await bed.createModel('embedder', '', { architecture: 'bert', poolingType: 1 });
    await assert.rejects(
      run(command({ model: 'embedder' })),
      (e: unknown) => e instanceof UnsupportedCapabilityError && e.message === '"embedder" does not support generate',
    );
  });

  it('surfaces a mid-stream native error after the deltas', async () => {
    bed.binding.script = () => ({ pieces: ['a'], error: { code: 'LLAMA_DECODE_FAILED', message: 'boom' } });
    const seen: GenerationEvent[] = [];
    await assert.rejects(
      lastValueFrom(bed.generate.generate(command()).pipe(toArray())).catch((e: unknown) => {
        throw e;
      }),
      InternalError,
    );
    const sub = bed.generate.generate(command()).subscribe({ next: (e) => seen.push(e), error: () => undefined });
    await new Promise((r) => setTimeout(r, 30));
    sub.unsubscribe();
    assert.deepEqual(seen, [{ kind: 'delta', text: 'a' }]);
  });

  it('cancels the native task when the subscriber goes away and releases the runner', async () => {
    bed.binding.script = () => ({ pieces: Array.from({ length: 1000 }, () => 'x'), delayMs: 1 });
    const firstTwo = await lastValueFrom(bed.generate.generate(command()).pipe(take(2), toArray()));
    assert.equal(firstTwo.length, 2);
    assert.deepEqual(bed.binding.cancelled, [1]);
    assert.equal(bed.scheduler.loaded()[0].refCount, 0);
  });
});
