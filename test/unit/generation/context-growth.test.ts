import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import { ContextLengthExceededError } from '../../../src/common/errors';
import { ChatCommand } from '../../../src/generation/generation.types';
import { MemoryProbe } from '../../../src/scheduler/memory.estimator';
import { DaemonConfig } from '../../../src/config';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

const command = (content: string, overrides: Partial<ChatCommand> = {}): ChatCommand => ({
  model: 'long',
  messages: [{ role: 'user', content }],
  options: {},
  startedAt: process.hrtime.bigint(),
  ...overrides,
});

/** The slot context the model is loaded with now. */
const loadedCtx = (bed: InferenceTestbed) => bed.scheduler.loaded().map((r) => r.spec.numCtx);

// Issue 12 §5: a compat prompt longer than the loaded context grows the context instead of being cut.
describe('growing the context for a long prompt (growContext)', () => {
  let bed: InferenceTestbed;

  async function setUp(config: Partial<DaemonConfig> = {}, memory?: MemoryProbe): Promise<void> {
    bed = await createInferenceTestbed({ config, memory });
    await bed.createModel('long', '', { chatTemplate: '{{ chatml }}', contextLength: 32768 });
  }

  afterEach(() => bed.close());

  const run = (cmd: ChatCommand) => lastValueFrom(bed.chat.chat(cmd).pipe(toArray()));

  it('reloads with a context for the whole prompt plus the reply, and keeps it for the next turn', async () => {
    await setUp();
    const long = 'x'.repeat(5000);
    const events = await run(command(long, { growContext: true }));
    assert.equal(events.at(-1)?.kind, 'done');
    assert.deepEqual(loadedCtx(bed), [8192], 'max(prompt + 1024, 2 × 4096), in steps of 1024');
    const submitted = bed.binding.submitted.at(-1)!.tokens;
    assert.ok(submitted.length > 5000, 'the whole prompt was evaluated');
    const done = events.at(-1);
    assert.equal(done?.kind === 'done' && done.metrics?.promptEvalCount, submitted.length);

    await run(command('short', { growContext: true }));
    assert.deepEqual(loadedCtx(bed), [8192], 'a short turn reuses the larger context');
  });

  it('reserves num_predict for the reply', async () => {
    await setUp();
    await run(command('y'.repeat(9000), { growContext: true, options: { num_predict: 4000 } }));
    assert.deepEqual(loadedCtx(bed), [13312]);
  });

  it('is capped by the trained context and by OLLAMA_CONTEXT_LENGTH; the prompt alone too long is a 400', async () => {
    await setUp();
    await run(command('z'.repeat(31000), { growContext: true }));
    assert.deepEqual(loadedCtx(bed), [32768], 'the reply does not fit whole: the cap is used');
    await assert.rejects(run(command('z'.repeat(40000), { growContext: true })), (err: unknown) => {
      assert.ok(err instanceof ContextLengthExceededError);
      assert.match(err.message, /the prompt is 400\d\d tokens, .*at most 32768 tokens of context/);
      return true;
    });
    await bed.close();

    await setUp({ contextLength: 6000 });
    await run(command('w'.repeat(5000), { growContext: true }));
    assert.deepEqual(loadedCtx(bed), [6000]);
    await assert.rejects(run(command('w'.repeat(7000), { growContext: true })), /OLLAMA_CONTEXT_LENGTH/);
  });

  it('answers 400 naming both sizes when memory does not allow the larger context', async () => {
    const tight: MemoryProbe = {
      estimate: (spec) => Promise.resolve(spec.numCtx * 1_000_000),
      free: () => 5e9,
      total: () => 8e9,
    };
    await setUp({}, tight);
    await assert.rejects(run(command('m'.repeat(9000), { growContext: true })), (err: unknown) => {
      assert.ok(err instanceof ContextLengthExceededError);
      assert.match(err.message, /the prompt is 90\d\d tokens, more than the loaded context of 4096 tokens/);
      assert.match(err.message, /a 10240-token context needs about \d+ MiB/);
      return true;
    });
  });

  it('without growContext (the native API) the prompt is cut as Ollama does and the context stays', async () => {
    await setUp();
    const events = await run(command('x'.repeat(5000)));
    assert.equal(events.at(-1)?.kind, 'done');
    assert.deepEqual(loadedCtx(bed), [4096]);
    assert.ok(bed.binding.submitted.at(-1)!.tokens.length < 4096);
  });
});
