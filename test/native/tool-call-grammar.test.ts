// The forced-call grammars of rendered mode (src/templates/tool-call.grammar.ts) through llama.cpp itself: each one,
// built from a real template's tool-call syntax with json_schema_to_grammar arguments, parses in llama.cpp's grammar
// sampler and drives the random-weight tiny-qwen2-tools to a complete call that Ollama's parser reads back with
// arguments following the schema (reference native-core.md grammars, ollama-api.md §8.5).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { QWEN_TOOLS_GO_TEMPLATE } from '../../scripts/test-model-templates';
import {
  buildToolCallGrammar,
  GoTemplate,
  inferToolCallSyntax,
  loadLibraryTemplate,
  renderPrompt,
  TemplateTool,
  ToolCallParser,
} from '../../src/templates';
import { gbnfAccepts } from '../unit/templates/gbnf-matcher';
import * as TOOL_TEMPLATES from '../unit/templates/tool-templates';
import { TINY_QWEN2_TOOLS, ensureTestModels } from '../utils/models';
import { GREEDY, binding, loadModel, runTask, seeded } from './native-helpers';

ensureTestModels();

const TOOLS: TemplateTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather forecast',
      parameters: {
        type: 'object',
        required: ['city', 'days'],
        properties: { city: { type: 'string', maxLength: 12 }, days: { type: 'integer', minimum: 1, maximum: 7 } },
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'get_time',
      description: 'Current time',
      parameters: {
        type: 'object',
        required: ['zone'],
        properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } },
      },
    },
  },
];

/** Asserts the arguments follow the schema of the named tool. */
function assertArgs(name: string, args: Record<string, unknown>): void {
  if (name === 'get_time') {
    assert.deepEqual(Object.keys(args), ['zone']);
    assert.ok(['UTC', 'CET'].includes(args.zone as string));
    return;
  }
  assert.deepEqual(Object.keys(args).sort(), ['city', 'days']);
  assert.ok(typeof args.city === 'string' && [...args.city].length <= 12);
  assert.ok(Number.isInteger(args.days) && (args.days as number) >= 1 && (args.days as number) <= 7);
}

const TEMPLATES: [string, string][] = [
  ['test model (Hermes <tool_call>)', QWEN_TOOLS_GO_TEMPLATE],
  ['qwen3 (Hermes)', TOOL_TEMPLATES.QWEN3],
  ['nemotron (<toolcall>)', TOOL_TEMPLATES.NEMOTRON],
  ['llama3.2 (bare JSON)', TOOL_TEMPLATES.LLAMA3_2],
  ['mistral ([TOOL_CALLS] list)', TOOL_TEMPLATES.MISTRAL],
  ['firefunction (functools[ list)', TOOL_TEMPLATES.FIREFUNCTION],
  ['xlam ({"tool_calls": [...]})', TOOL_TEMPLATES.XLAM],
  ['command-r (library, Action: list)', loadLibraryTemplate('command-r').template],
];

describe('forced-call grammars in llama.cpp (tiny-qwen2-tools)', () => {
  let model: NativeModel;
  let ctx: NativeContext;

  before(async () => {
    model = await loadModel(TINY_QWEN2_TOOLS);
    ctx = new binding.Context(model, { nCtx: 2048, nThreads: 2 });
  });
  after(async () => {
    await ctx.dispose();
    await model.dispose();
  });

  for (const [name, text] of TEMPLATES) {
    it(`${name}: the grammar parses and forces one complete call that the tool-call parser reads`, async () => {
      const t = GoTemplate.parse(text);
      const syntax = inferToolCallSyntax(t);
      const grammar = buildToolCallGrammar(syntax, TOOLS, (s) => binding.jsonSchemaToGrammar(s))!;
      const prompt = renderPrompt(t, { tools: TOOLS, messages: [{ role: 'user', content: 'Weather in Paris?' }] });
      // Greedy everywhere; the test model's own syntax also with seeded sampling through the whole chain.
      for (const sampling of text === QWEN_TOOLS_GO_TEMPLATE ? [GREEDY, seeded(11)] : [GREEDY]) {
        const out = await runTask(ctx, {
          tokens: model.tokenize(prompt, true, true),
          nPredict: 256,
          sampling: { ...sampling, grammar, preservedTokens: [syntax.tag] },
        });
        assert.equal(out.done.reason, 'eog', `the grammar ended the output: ${JSON.stringify(out.text)}`);
        assert.ok(out.text.startsWith(syntax.family === 'json' ? '{' : syntax.open), out.text);
        assert.ok(gbnfAccepts(grammar, out.text), `the test recognizer agrees: ${JSON.stringify(out.text)}`);
        const parser = new ToolCallParser(t, TOOLS);
        const calls = [...parser.add(out.text).toolCalls, ...parser.finish().toolCalls];
        assert.equal(calls.length, 1, out.text);
        const call = calls[0].function;
        // Command R names the tool in "tool_name": Ollama's parser returns the whole object as the arguments.
        const args = (
          syntax.argumentsKey === 'parameters' && 'tool_name' in call.arguments
            ? call.arguments.parameters
            : call.arguments
        ) as Record<string, unknown>;
        assertArgs(call.name, args);
      }
    });
  }

  it('parallel and thinking variants parse in llama.cpp too', async () => {
    const syntax = inferToolCallSyntax(GoTemplate.parse(QWEN_TOOLS_GO_TEMPLATE));
    const toGrammar = (s: string) => binding.jsonSchemaToGrammar(s);
    const tokens = model.tokenize('<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n', true, true);
    for (const options of [
      { parallel: true },
      { thinking: { open: '<think>', close: '</think>', startInThinking: false } },
      { thinking: { open: '<think>', close: '</think>', startInThinking: true }, parallel: true },
    ]) {
      const grammar = buildToolCallGrammar(syntax, TOOLS, toGrammar, options)!;
      const out = await runTask(ctx, { tokens, nPredict: 48, sampling: { ...GREEDY, grammar } });
      assert.ok(['eog', 'length'].includes(out.done.reason), JSON.stringify(options));
      if (options.thinking?.startInThinking) assert.ok(!out.text.startsWith('<tool_call>'), out.text);
    }
  });
});
