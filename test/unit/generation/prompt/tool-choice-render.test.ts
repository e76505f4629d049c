import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { QWEN_TOOLS_GO_TEMPLATE } from '../../../../scripts/test-model-templates';
import { InvalidRequestError } from '../../../../src/common/errors';
import { JSON_OBJECT_GRAMMAR } from '../../../../src/generation/prompt/format';
import { ToolDefinition } from '../../../../src/generation/generation.types';
import { loadGoTemplates } from '../../../../src/generation/prompt/go-template.port';
import { goGrammars, renderGo } from '../../../../src/generation/prompt/go-render';
import { GrammarBudget } from '../../../../src/generation/prompt/grammar-budget';
import { nativeGrammars, renderNative } from '../../../../src/generation/prompt/native-render';
import type { NativeRenderOptions } from '../../../../src/generation/prompt/render-options';
import type { RunnerChatRender, RunnerChatRequest } from '../../../../src/runner/runner';
import { FakeRunner, spec } from '../../../utils/fake-runner';

// How `toolChoice: 'required'` reaches generation (src/generation/prompt/native-render.ts, go-render.ts): native mode keeps llama.cpp's
// required-call grammar but starts the call in the prompt (its opening = the lazy grammar's trigger word) so no free
// text comes first, and limits it to one call; rendered mode builds a grammar from the Go template's own tool-call
// syntax (src/templates/tool-call.grammar.ts). Reference ollama-api.md §8.5, native-core.md (grammars).

const weather: ToolDefinition = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

const GEN_PROMPT = '<|im_start|>assistant\n';
const REQUIRED_GRAMMAR = [
  `root ::= "${GEN_PROMPT.replace('\n', '\\n')}" space until-1? tool-calls`,
  'tool-calls ::= (tool-call space)+',
  'tool-call ::= "<tool_call>\\n" space "{}" space "</tool_call>"',
  'space ::= | " "',
  'until-1 ::= [^<]*',
].join('\n');

/** A runner whose renderChat answers like common/chat for a Hermes template (required: non-lazy; auto: lazy). */
class ChatRunner extends FakeRunner {
  thinking = false;
  autoTriggers: RunnerChatRender['grammarTriggers'] = [{ type: 'word', value: '<tool_call>\n' }];
  readonly parsed: string[] = [];

  constructor() {
    super(spec());
  }

  override async renderChat(request: RunnerChatRequest): Promise<RunnerChatRender> {
    await Promise.resolve();
    this.renders.push(request);
    const required = request.toolChoice === 'required';
    const hasTools = (request.tools?.length ?? 0) > 0;
    return {
      prompt: `<|im_start|>user\n${request.messages.at(-1)!.content}<|im_end|>\n${GEN_PROMPT}`,
      format: 'peg-native',
      grammar: hasTools ? REQUIRED_GRAMMAR : '',
      grammarLazy: hasTools && !required,
      grammarTriggers: hasTools && !required ? this.autoTriggers : [],
      preservedTokens: ['<tool_call>', '</tool_call>'],
      additionalStops: [],
      thinking: this.thinking,
      generationPrompt: GEN_PROMPT,
      parser: {
        parse: (text) => {
          this.parsed.push(text);
          return { content: '', reasoningContent: '', toolCalls: [] };
        },
        parseStep: (text) => {
          this.parsed.push(text);
          return { content: '', reasoningContent: '', toolCalls: [], frontier: 0 };
        },
        stepDelimiters: () => [],
      },
    };
  }

  override async jsonSchemaToGrammar(schema: string): Promise<string> {
    await Promise.resolve();
    if (schema.includes('"nope"')) throw new InvalidRequestError('Unrecognized schema: "nope"', 'format');
    return 'root ::= "{}"';
  }
}

const messages = [{ role: 'user' as const, content: 'Weather in Paris?' }];
const base = { think: undefined, thinking: false };

/** renderNative with the request's tools and grammars prepared once, as the prompt stage does. */
async function native(runner: ChatRunner, opts: NativeRenderOptions) {
  const budget = GrammarBudget.of(opts.format, opts.tools);
  return renderNative(runner, messages, opts, await nativeGrammars(runner, opts, budget), budget);
}

describe('renderNative with toolChoice "required"', () => {
  it('puts the call opening at the end of the prompt, prefills the grammar past it, one call only', async () => {
    const runner = new ChatRunner();
    const { text, prompt } = await native(runner, {
      ...base,
      tools: [weather],
      toolChoice: 'required',
    });
    assert.ok(text.endsWith(`${GEN_PROMPT}<tool_call>\n`), JSON.stringify(text));
    assert.equal(prompt.grammarPrefill, `${GEN_PROMPT}<tool_call>\n`);
    assert.equal(prompt.grammarLazy, false);
    assert.deepEqual(prompt.grammarTriggers, []);
    assert.match(prompt.grammar!, /^tool-calls ::= tool-call space$/m);
    assert.deepEqual(prompt.preservedTokens, ['<tool_call>', '</tool_call>']);
    assert.deepEqual(
      runner.renders.map((r) => r.toolChoice),
      ['required', 'auto'],
      'the lazy render gives the trigger word',
    );
    // The parser reads the output as if the model had written the opening.
    prompt.parser!.add('{"name"');
    assert.equal(runner.parsed.at(-1), '<tool_call>\n{"name"');
  });

  it('keeps llama.cpp grammar as it is when thinking comes first or the trigger is not one word', async () => {
    const thinking = new ChatRunner();
    thinking.thinking = true;
    const a = await native(thinking, { ...base, tools: [weather], toolChoice: 'required' });
    assert.ok(a.text.endsWith(GEN_PROMPT));
    assert.equal(a.prompt.grammar, REQUIRED_GRAMMAR);
    assert.equal(a.prompt.grammarPrefill, GEN_PROMPT);
    assert.equal(thinking.renders.length, 1);

    const pattern = new ChatRunner();
    pattern.autoTriggers = [{ type: 'pattern', value: '<tool_call>|<function=' }];
    const b = await native(pattern, { ...base, tools: [weather], toolChoice: 'required' });
    assert.ok(b.text.endsWith(GEN_PROMPT));
    assert.equal(b.prompt.grammar, REQUIRED_GRAMMAR);
  });

  it('auto: one render, the lazy grammar and its triggers unchanged', async () => {
    const runner = new ChatRunner();
    const { text, prompt } = await native(runner, { ...base, tools: [weather] });
    assert.ok(text.endsWith(GEN_PROMPT));
    assert.equal(prompt.grammarLazy, true);
    assert.equal(prompt.grammarPrefill, undefined);
    assert.equal(runner.renders.length, 1);
  });
});

describe('renderGo with toolChoice "required"', () => {
  const api = loadGoTemplates()!;
  const template = api.GoTemplate.parse(QWEN_TOOLS_GO_TEMPLATE);
  /** renderGo with the grammars converted once, as the prompt stage does. */
  const go = async (runner: ChatRunner, opts: NativeRenderOptions) =>
    renderGo(
      api,
      template,
      messages,
      opts,
      await goGrammars(api, template, runner, opts, GrammarBudget.of(opts.format, opts.tools)),
    );

  it("forces a call in the template's own syntax from the first token", async () => {
    const { text, prompt } = await go(new ChatRunner(), {
      ...base,
      tools: [weather],
      toolChoice: 'required',
    });
    assert.ok(text.endsWith('<|im_start|>assistant\n'));
    const lines = prompt.grammar!.split('\n');
    assert.equal(lines[0], 'root ::= tool-calls');
    assert.ok(lines.includes('tool-call ::= "<tool_call>\\n" tool-call-object "\\n</tool_call>"'));
    assert.ok(lines.includes('args0-root ::= "{}"'));
    assert.equal(prompt.grammarLazy, undefined);
    assert.deepEqual(prompt.preservedTokens, ['<tool_call>', '</tool_call>']);
    assert.ok(prompt.parser, 'the tool-call parser reads the call');
  });

  it('auto and "format" leave the forced grammar out', async () => {
    const auto = await go(new ChatRunner(), { ...base, tools: [weather] });
    assert.equal(auto.prompt.grammar, undefined);
    const format = await go(new ChatRunner(), {
      ...base,
      tools: [weather],
      toolChoice: 'required',
      format: { kind: 'json' },
    });
    assert.equal(format.prompt.grammar, JSON_OBJECT_GRAMMAR);
  });

  it('a tool schema the converter rejects is a 400 naming the tool', async () => {
    const bad: ToolDefinition = { type: 'function', function: { name: 'bad', parameters: { type: 'nope' } } };
    await assert.rejects(go(new ChatRunner(), { ...base, tools: [bad], toolChoice: 'required' }), (err: unknown) => {
      assert.ok(err instanceof InvalidRequestError);
      assert.match(err.message, /^invalid JSON schema in the parameters of tool "bad": /);
      return true;
    });
  });
});
