import { Logger } from '@nestjs/common';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ContextLengthExceededError, UnsupportedCapabilityError } from '../../../../src/common/errors';
import { GenerateCommand } from '../../../../src/generation/generation.types';
import { resolveOptions } from '../../../../src/generation/options/options';
import { setGoTemplatesForTesting } from '../../../../src/generation/prompt/go-template.port';
import { PromptService } from '../../../../src/generation/prompt/prompt.service';
import { FakeRunner, spec } from '../../../utils/fake-runner';
import { fakeChatCommand, fakeResolvedModel } from '../../../utils/resolved-model';

/**
 * The prompt stage on its own (no scheduler, no completion): PromptService over a FakeRunner, whose template renders
 * `role: content` lines and whose tokenizer gives one token per character.
 */

/** The fields of a ResolvedModel the prompt stage reads. */
const model = fakeResolvedModel;

const chatCmd = fakeChatCommand;

const generateCmd = (overrides: Partial<GenerateCommand> = {}): GenerateCommand => ({
  model: 'fake',
  prompt: 'Hi',
  raw: false,
  options: {},
  startedAt: process.hrtime.bigint(),
  ...overrides,
});

const options = (numKeep = 4) => resolveOptions({ num_keep: numKeep }, {}, { contextLength: 0, threads: 0 });
const text = (tokens: number[]) => String.fromCharCode(...tokens);

describe('PromptService (the prompt stage)', () => {
  Logger.overrideLogger(false);
  const prompts = new PromptService();

  it('prepares a chat prompt for the runner it is given: assembled messages, native render, tokens', async () => {
    const runner = new FakeRunner(spec());
    const prepared = await prompts.prepare(
      { kind: 'chat', cmd: chatCmd() },
      model({ system: 'Be brief.' }),
      runner,
      options(),
    );
    assert.equal(text(prepared.tokens), 'system: Be brief.\nuser: Hi\nassistant: ');
    assert.equal(runner.renders.length, 1);
    assert.ok(prepared.parser, 'the render’s output parser comes with the prompt');
  });

  it('countChat gives the tokens prepareChat submits for a prompt that fits', async () => {
    const runner = new FakeRunner(spec());
    const cmd = chatCmd({
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
      ],
    });
    const counted = await prompts.countChat(cmd, model(), runner);
    const prepared = await prompts.prepareChat(cmd, model(), runner, options());
    assert.deepEqual(counted.tokens, prepared.tokens);
  });

  it('drops old chat messages, then cuts tokens, to fit the slot; truncate: false is the prompt-too-long 400', async () => {
    const runner = new FakeRunner(spec({ numCtx: 40 }));
    const cmd = chatCmd({
      messages: [
        { role: 'user', content: 'x'.repeat(30) },
        { role: 'user', content: 'last' },
      ],
    });
    const prepared = await prompts.prepareChat(cmd, model(), runner, options());
    assert.equal(text(prepared.tokens), 'user: last\nassistant: ');
    const long = chatCmd({ messages: [{ role: 'user', content: 'y'.repeat(60) }] });
    assert.ok((await prompts.prepareChat(long, model(), runner, options())).tokens.length < 40);
    await assert.rejects(
      prompts.prepareChat({ ...long, growContext: true }, model(), runner, options()),
      (e: unknown) => e instanceof ContextLengthExceededError && e.promptTokens === 78,
    );
  });

  it('prepares a generate prompt: token prompts are detokenized first, raw is verbatim', async () => {
    const runner = new FakeRunner(spec());
    const prepared = await prompts.prepare(
      { kind: 'generate', cmd: generateCmd({ raw: true, prompt: '', promptTokens: [72, 105] }) },
      model(),
      runner,
      options(),
    );
    assert.equal(text(prepared.tokens), 'Hi');
    assert.equal(runner.renders.length, 0);
  });

  it('renders generate natively without a Go template; a suffix then is not supported', async () => {
    const runner = new FakeRunner(spec());
    const prepared = await prompts.prepareGenerate(generateCmd(), model(), runner, options());
    assert.equal(text(prepared.tokens), 'user: Hi\nassistant: ');
    await assert.rejects(
      prompts.prepareGenerate(generateCmd({ suffix: 'end' }), model(), runner, options()),
      UnsupportedCapabilityError,
    );
  });

  it('falls back to the GGUF template when no Go engine is available', async () => {
    setGoTemplatesForTesting(null);
    try {
      const runner = new FakeRunner(spec());
      await prompts.prepareChat(chatCmd(), model({ template: '{{ .Prompt }}' }), runner, options());
      assert.equal(runner.renders.length, 1);
    } finally {
      setGoTemplatesForTesting(undefined);
    }
  });

  it('renders natively when the TEMPLATE_RENDERER gives no engine, even for a model with a Go template', async () => {
    const native = new PromptService({ engine: () => undefined });
    const runner = new FakeRunner(spec());
    const prepared = await native.prepareChat(chatCmd(), model({ template: '{{ .Prompt }}' }), runner, options());
    assert.equal(runner.renders.length, 1, 'the GGUF template rendered it');
    assert.equal(text(prepared.tokens), 'user: Hi\nassistant: ');
  });
});
