import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import { InvalidRequestError, ModelNotFoundError, UnsupportedCapabilityError } from '../../../src/common/errors';
import { assembleChatMessages } from '../../../src/generation/prompt/messages';
import { ChatCommand } from '../../../src/generation/generation.types';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

const command = (overrides: Partial<ChatCommand> = {}): ChatCommand => ({
  model: 'tiny',
  messages: [{ role: 'user', content: 'Hi' }],
  options: {},
  startedAt: process.hrtime.bigint(),
  ...overrides,
});

const text = (tokens: ArrayLike<number>) => String.fromCharCode(...Array.from(tokens).filter((t) => t !== 1));

describe('ChatService', () => {
  let bed: InferenceTestbed;

  beforeEach(async () => {
    bed = await createInferenceTestbed({ config: { contextLength: 256 } });
    await bed.createModel('tiny', 'SYSTEM Be brief.\nMESSAGE user Who are you?\nMESSAGE assistant A model.');
  });

  afterEach(() => bed.close());

  const run = (cmd: ChatCommand) => lastValueFrom(bed.chat.chat(cmd).pipe(toArray()));

  it('prepends SYSTEM and the MESSAGE history, then renders with the chat template', async () => {
    const events = await run(command());
    assert.equal(events.at(-1)?.kind, 'done');
    assert.equal(
      text(bed.binding.submitted[0].tokens),
      '<|im_start|>system\nBe brief.<|im_end|>\n' +
        '<|im_start|>user\nWho are you?<|im_end|>\n' +
        '<|im_start|>assistant\nA model.<|im_end|>\n' +
        '<|im_start|>user\nHi<|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
  });

  it('asks for context shift unless shift is false', async () => {
    await run(command());
    await run(command({ shift: false }));
    await run(command({ shift: true }));
    assert.deepEqual(
      bed.binding.submitted.map((t) => t.contextShift),
      [true, false, true],
    );
  });

  it('keeps the request’s own system message instead of SYSTEM', async () => {
    const model = await bed.models.resolve('tiny');
    const cmd = command({
      messages: [
        { role: 'system', content: 'Mine.' },
        { role: 'user', content: 'x' },
      ],
    });
    const messages = assembleChatMessages(cmd, { ...model, messages: [] });
    assert.deepEqual(messages, [
      { role: 'system', content: 'Mine.' },
      { role: 'user', content: 'x' },
    ]);
  });

  it('drops the oldest non-system messages when the conversation does not fit', async () => {
    const long = 'y'.repeat(120);
    await run(
      command({
        options: { num_ctx: 160 },
        messages: [
          { role: 'user', content: long },
          { role: 'assistant', content: long },
          { role: 'user', content: 'last' },
        ],
      }),
    );
    const prompt = text(bed.binding.submitted[0].tokens);
    assert.ok(prompt.startsWith('<|im_start|>system\nBe brief.'), 'system kept');
    assert.ok(prompt.includes('user\nlast'), 'last message kept');
    assert.ok(!prompt.includes(long), 'old long messages dropped');
    assert.ok(bed.binding.submitted[0].tokens.length < 160);
  });

  it('answers empty messages with load, and with unload for keep_alive 0', async () => {
    assert.deepEqual(await run(command({ messages: [] })), [{ kind: 'done', reason: 'load' }]);
    assert.deepEqual(await run(command({ messages: [], keepAliveMs: 0 })), [{ kind: 'done', reason: 'unload' }]);
    assert.equal(bed.scheduler.loaded().length, 0);
  });

  it('fails like Ollama before streaming', async () => {
    await assert.rejects(
      run(command({ model: '' })),
      (e: unknown) => e instanceof InvalidRequestError && e.message === 'model is required',
    );
    await assert.rejects(
      run(command({ model: 'nope' })),
      (e: unknown) => e instanceof ModelNotFoundError && e.message === "model 'nope' not found",
    );
    await assert.rejects(
      run(command({ tools: [{ type: 'function' }] })),
      (e: unknown) =>
        e instanceof UnsupportedCapabilityError &&
        e.message === 'registry.ollama.ai/library/tiny:latest does not support tools',
    );
    await assert.rejects(
      run(command({ think: 'high' })),
      (e: unknown) => e instanceof UnsupportedCapabilityError && e.message === '"tiny" does not support thinking',
    );
    await bed.createModel('embedder', '', { architecture: 'bert', poolingType: 1 });
    await assert.rejects(
      run(command({ model: 'embedder' })),
      (e: unknown) => e instanceof UnsupportedCapabilityError && e.message === '"embedder" does not support chat',
    );
  });
});
