import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { lastValueFrom, tap, toArray } from 'rxjs';
import { InvalidRequestError } from '../../../src/common/errors';
import { ChatCommand, GenerateCommand, GenerationEvent } from '../../../src/generation/generation.types';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

const chatCommand = (overrides: Partial<ChatCommand> = {}): ChatCommand => ({
  model: 'm',
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Weather in Paris?' },
  ],
  tools: [{ type: 'function', function: { name: 'get_weather', description: 'w', parameters: { type: 'object' } } }],
  options: {},
  growContext: true,
  startedAt: process.hrtime.bigint(),
  ...overrides,
});

const promptEvalCount = (events: GenerationEvent[]) => {
  const done = events.at(-1);
  return done?.kind === 'done' ? done.metrics?.promptEvalCount : undefined;
};

// Issue 12 §2: count_tokens and the messages path share ONE render + tokenize step (PromptService.countChat), and
// the compat layers learn the prompt size before the first event (ChatObserver).
describe('prompt counting shared with generation', () => {
  let bed: InferenceTestbed;

  afterEach(() => bed.close());

  it('countPromptTokens equals the promptEvalCount of the same chat; the observer gets it before any event', async () => {
    bed = await createInferenceTestbed();
    await bed.createModel('m', 'SYSTEM "Modelfile system"', {
      chatTemplate: '{% for tool in tools %}{{ tool }}{% endfor %}{{ chatml }}',
    });
    const cmd = chatCommand();
    const counted = await lastValueFrom(bed.chat.countPromptTokens(cmd));
    const seen: Array<number | string> = [];
    const events = await lastValueFrom(
      bed.chat.chat(cmd, { onPrompt: (n) => seen.push(n) }).pipe(
        tap((e) => seen.push(e.kind)),
        toArray(),
      ),
    );
    assert.equal(promptEvalCount(events), counted);
    assert.equal(bed.binding.submitted.at(-1)?.tokens.length, counted);
    assert.equal(seen[0], counted, 'onPrompt comes first');
    assert.equal(seen.filter((s) => typeof s === 'number').length, 1, 'once');
  });

  it('with growContext, the count reuses the grown context instead of reloading a smaller one', async () => {
    bed = await createInferenceTestbed();
    await bed.createModel('m', '', { chatTemplate: '{{ chatml }}', contextLength: 32768 });
    const long = chatCommand({ messages: [{ role: 'user', content: 'x'.repeat(6000) }], tools: undefined });
    const seen: number[] = [];
    const events = await lastValueFrom(bed.chat.chat(long, { onPrompt: (n) => seen.push(n) }).pipe(toArray()));
    const ctx = bed.scheduler.loaded().map((r) => r.spec.numCtx);
    assert.ok(ctx[0] > 4096, `grown to ${ctx[0]}`);
    assert.deepEqual(seen, [promptEvalCount(events)], 'only the attempt that ran reports its prompt');
    const counted = await lastValueFrom(bed.chat.countPromptTokens(long));
    assert.equal(counted, promptEvalCount(events));
    assert.deepEqual(
      bed.scheduler.loaded().map((r) => r.spec.numCtx),
      ctx,
      'no reload',
    );
    assert.equal(bed.binding.models.length, 2, 'loaded twice: the default context, then the grown one');
  });

  it('generate with promptTokens detokenizes them and runs them like the text prompt', async () => {
    bed = await createInferenceTestbed();
    await bed.createModel('m');
    const base: GenerateCommand = {
      model: 'm',
      prompt: '',
      raw: false,
      options: {},
      startedAt: process.hrtime.bigint(),
    };
    const byText = await lastValueFrom(bed.generate.generate({ ...base, prompt: 'Hi!' }).pipe(toArray()));
    const textTokens = bed.binding.submitted.at(-1)!.tokens;
    const ids = Array.from('Hi!', (c) => c.charCodeAt(0)); // the fake vocabulary: one token per char code
    const byIds = await lastValueFrom(bed.generate.generate({ ...base, promptTokens: ids }).pipe(toArray()));
    assert.deepEqual(Array.from(bed.binding.submitted.at(-1)!.tokens), Array.from(textTokens));
    assert.equal(promptEvalCount(byIds), promptEvalCount(byText));
    const done = byIds.at(-1);
    assert.ok(done?.kind === 'done' && done.reason !== 'load', 'not the load shortcut');
  });

  it('an out-of-vocabulary token id is a 400 (real addon range check; the fake takes any id)', async () => {
    bed = await createInferenceTestbed();
    await bed.createModel('m');
    const fakeModel = bed.binding.Model.prototype as { detokenize: (t: Int32Array) => string };
    const original = fakeModel.detokenize;
    fakeModel.detokenize = () => {
      throw Object.assign(new Error('token id 99999999 is out of range'), { code: 'LLAMA_INVALID_ARGUMENT' });
    };
    try {
      const cmd: GenerateCommand = {
        model: 'm',
        prompt: '',
        promptTokens: [99999999],
        raw: false,
        options: {},
        startedAt: process.hrtime.bigint(),
      };
      await assert.rejects(lastValueFrom(bed.generate.generate(cmd)), (err: unknown) => {
        assert.ok(err instanceof InvalidRequestError, String(err));
        assert.match(err.message, /out of range/);
        return true;
      });
    } finally {
      fakeModel.detokenize = original;
    }
  });
});
