import { Logger } from '@nestjs/common';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { QWEN_TOOLS_GO_TEMPLATE } from '../../../../scripts/test-model-templates';
import { InvalidRequestError, RequestCancelledError } from '../../../../src/common/errors';
import { ToolDefinition } from '../../../../src/generation/generation.types';
import { resolveOptions } from '../../../../src/generation/options/options';
import { MAX_REQUEST_SCHEMA_BYTES } from '../../../../src/generation/prompt/grammar-budget';
import { PromptService } from '../../../../src/generation/prompt/prompt.service';
import type { ResolvedModel } from '../../../../src/models';
import type { RunnerChatRender, RunnerChatRequest } from '../../../../src/runner/runner';
import { FakeRunner, spec } from '../../../utils/fake-runner';
import { fakeChatCommand, fakeResolvedModel } from '../../../utils/resolved-model';

/**
 * The prompt stage's per-request work bounds (issue 32 §1): one grammar budget over `format` and every tool (native
 * and rendered mode), grammars converted once per request however often the conversation is rendered, O(log n)
 * renders to fit a long chat, and the request's AbortSignal checked between steps. FakeRunner: `role: content`
 * lines, one token per character, `root ::= <schema>` grammars.
 */

/** A model with tools (the prompt stage reads its fields). */
const model = (overrides: Partial<ResolvedModel> = {}): ResolvedModel =>
  fakeResolvedModel({ capabilities: ['completion', 'tools'], ...overrides });
const rendered = () => model({ template: QWEN_TOOLS_GO_TEMPLATE });

const chatCmd = fakeChatCommand;

const options = () => resolveOptions({}, {}, { contextLength: 0, threads: 0 });

/** A tool whose parameters schema is about `bytes` of JSON text. */
const tool = (name: string, bytes: number): ToolDefinition => ({
  type: 'function',
  function: {
    name,
    description: name,
    parameters: { type: 'object', properties: { p: { type: 'string', description: name + 'x'.repeat(bytes) } } },
  },
});
const tools = (n: number, bytes: number) => Array.from({ length: n }, (_, i) => tool(`t${i}`, bytes));

/** A FakeRunner whose native render builds a tool-call grammar of `grammarBytes` when the request has tools. */
class GrammarRunner extends FakeRunner {
  grammarBytes = 0;
  onRender?: (request: RunnerChatRequest) => void;

  override async renderChat(request: RunnerChatRequest): Promise<RunnerChatRender> {
    const render = await super.renderChat(request);
    this.onRender?.(request);
    const grammar = request.tools?.length && request.toolChoice !== 'none' ? 'g'.repeat(this.grammarBytes) : '';
    return { ...render, grammar, grammarLazy: grammar !== '' };
  }
}

/** Whether `err` is the per-request budget's 400 for `param`. */
const budget400 = (param: string) => (err: unknown) =>
  err instanceof InvalidRequestError &&
  err.param === param &&
  err.message.startsWith(`${param}: the JSON schemas of this request`) &&
  err.message.includes(`bytes per request`);

describe('the prompt stage: one grammar budget per request, fitting in O(log n) renders, abort', () => {
  Logger.overrideLogger(false);
  const prompts = new PromptService();

  it('native mode: 40 tools of 60 KB are refused before any render or conversion', async () => {
    const runner = new GrammarRunner(spec());
    await assert.rejects(
      prompts.prepareChat(chatCmd({ tools: tools(40, 60_000) }), model(), runner, options()),
      budget400('tools'),
    );
    assert.equal(runner.renders.length, 0);
    assert.equal(runner.conversions.length, 0);
  });

  it('counts format and every tool together, in both modes (each schema alone is under its own limit)', async () => {
    const format = {
      kind: 'schema' as const,
      schema: tool('f', 60_000).function!.parameters as Record<string, unknown>,
    };
    const cmd = chatCmd({ tools: tools(4, 60_000), format });
    for (const m of [model(), rendered()]) {
      const runner = new GrammarRunner(spec());
      await assert.rejects(prompts.prepareChat(cmd, m, runner, options()), budget400('tools'));
      assert.equal(runner.conversions.length, 0, 'nothing converted');
    }
    // Without the tools the format alone fits, and is converted once.
    const runner = new GrammarRunner(spec());
    const prepared = await prompts.prepareChat(chatCmd({ format }), model(), runner, options());
    assert.ok(prepared.grammar?.startsWith('root ::= '));
    assert.equal(runner.conversions.length, 1);
    assert.ok(MAX_REQUEST_SCHEMA_BYTES < 5 * 60_000);
  });

  it('rendered mode: a forced call converts each tool once; the grammars produced count together', async () => {
    const runner = new GrammarRunner(spec());
    const ok = await prompts.prepareChat(
      chatCmd({ tools: tools(3, 20_000), toolChoice: 'required' }),
      rendered(),
      runner,
      options(),
    );
    assert.match(ok.grammar!, /^root ::= tool-calls/);
    assert.equal(runner.conversions.length, 3);
    // 4 tools of 50 KB: 200 KB of schema fits the schema budget, but their grammars (twice as large) do not fit.
    const big = new GrammarRunner(spec());
    big.jsonSchemaToGrammar = (schema: string) => Promise.resolve(`root ::= ${'y'.repeat(2 * schema.length)}`);
    await assert.rejects(
      prompts.prepareChat(chatCmd({ tools: tools(4, 50_000), toolChoice: 'required' }), rendered(), big, options()),
      (err: unknown) => err instanceof InvalidRequestError && /make grammars of \d+ bytes/.test(err.message),
    );
  });

  it('native mode: the tool-call grammar llama.cpp builds is bounded per request', async () => {
    const runner = new GrammarRunner(spec());
    runner.grammarBytes = 300_000;
    await assert.rejects(
      prompts.prepareChat(chatCmd({ tools: tools(1, 100) }), model(), runner, options()),
      (err: unknown) => err instanceof InvalidRequestError && err.param === 'tools',
    );
    runner.grammarBytes = 1000;
    const prepared = await prompts.prepareChat(chatCmd({ tools: tools(1, 100) }), model(), runner, options());
    assert.equal(prepared.grammar?.length, 1000);
  });

  for (const [mode, m] of [
    ['native', model()],
    ['rendered', rendered()],
  ] as const) {
    it(`${mode} mode: a 4,000-message chat is fitted in O(log n) renders, its grammar converted once`, async () => {
      const runner = new GrammarRunner(spec({ numCtx: 512 }));
      runner.grammarBytes = 10;
      let tokenizations = 0;
      const tokenize = runner.tokenize.bind(runner);
      runner.tokenize = (text: string) => (tokenizations++, tokenize(text));
      const messages = Array.from({ length: 4000 }, (_, i) => ({
        role: i % 2 ? ('assistant' as const) : ('user' as const),
        content: `message ${i}`,
      }));
      const format = { kind: 'schema' as const, schema: { type: 'object' } };
      const prepared = await prompts.prepareChat(
        chatCmd({ messages, tools: tools(2, 50), format }),
        m,
        runner,
        options(),
      );
      assert.ok(prepared.tokens.length < 512);
      assert.equal(runner.conversions.length, 1, 'the format grammar is converted once');
      assert.ok(tokenizations <= 3 + Math.ceil(Math.log2(4000)), `${tokenizations} tokenizations`);
      if (mode === 'native') {
        assert.ok(runner.renders.length <= 3 + Math.ceil(Math.log2(4000)), `${runner.renders.length} renders`);
        const full = runner.renders.filter((r) => r.toolChoice !== 'none');
        assert.equal(full.length, 2, 'two full renders (the first and the kept messages), the rest text only');
      }
    });
  }

  it('stops between steps once the client has gone: no render or tokenization after the abort', async () => {
    const runner = new GrammarRunner(spec({ numCtx: 64 }));
    const abort = new AbortController();
    runner.onRender = () => abort.abort();
    const messages = Array.from({ length: 100 }, (_, i) => ({ role: 'user' as const, content: `message ${i}` }));
    let tokenizations = 0;
    const tokenize = runner.tokenize.bind(runner);
    runner.tokenize = (text: string) => (tokenizations++, tokenize(text));
    await assert.rejects(
      prompts.prepare({ kind: 'chat', cmd: chatCmd({ messages }) }, model(), runner, options(), abort.signal),
      RequestCancelledError,
    );
    assert.equal(runner.renders.length, 1);
    assert.equal(tokenizations, 0);
    // An aborted signal stops a generate prompt before its format conversion, too.
    const gone = AbortSignal.abort();
    await assert.rejects(
      prompts.prepare(
        {
          kind: 'generate',
          cmd: {
            model: 'fake',
            prompt: 'Hi',
            raw: true,
            options: {},
            startedAt: 0n,
            format: { kind: 'schema', schema: {} },
          },
        },
        model(),
        runner,
        options(),
        gone,
      ),
      RequestCancelledError,
    );
    assert.equal(runner.conversions.length, 0);
  });
});
