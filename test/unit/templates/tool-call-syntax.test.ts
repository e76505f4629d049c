import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { QWEN_TOOLS_GO_TEMPLATE } from '../../../scripts/test-model-templates';
import {
  GoTemplate,
  inferToolCallSyntax,
  inferToolCallTag,
  loadLibraryTemplate,
  renderPrompt,
  ToolCallParser,
  ToolCallSyntax,
  TemplateTool,
} from '../../../src/templates';
import * as TOOL_TEMPLATES from './tool-templates';

// inferToolCallSyntax (src/templates/tool-call.syntax.ts) on real tool templates: Ollama's library (command-r, under
// assets/ollama-templates), Ollama's tool test templates (./tool-templates.ts) and the test model's Go template. The
// syntax is what the forced-call grammar writes, so besides the expected shape every case checks the round trip: the
// text the grammar admits for a call is exactly what the template itself prints for that call, and Ollama's
// tool-call parser (reference §8.5) reads it back as that call.

const NAME = 'get_weather';
const ARGS = { city: 'Paris', days: 3 };

const TOOLS: TemplateTool[] = [
  {
    type: 'function',
    function: {
      name: NAME,
      description: 'Weather forecast',
      parameters: {
        type: 'object',
        required: ['city', 'days'],
        properties: { city: { type: 'string' }, days: { type: 'integer' } },
      },
    },
  },
];

/** The text of one call as the grammar writes it: open, the object with the name and arguments, close. */
function callText(s: ToolCallSyntax, name: string, args: unknown): string {
  const object = s.object
    .map((p) => (typeof p === 'string' ? p : p.slot === 'name' ? JSON.stringify(name) : JSON.stringify(args)))
    .join('');
  return s.open + object + s.close;
}

/** A conversation whose assistant turn is the call (content empty), followed by its result and a new question. */
function renderCall(t: GoTemplate): string {
  return renderPrompt(t, {
    tools: TOOLS,
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ function: { index: 0, name: NAME, arguments: ARGS } }],
      },
      { role: 'tool', content: '{"temp": 21}', toolName: NAME },
      { role: 'user', content: 'Thanks. And tomorrow?' },
    ],
  });
}

/** Parses `text` with Ollama's tool-call parser for template `t`, fed in small chunks as a stream is. */
function parseCalls(t: GoTemplate, text: string): { content: string; calls: { name: string; args: unknown }[] } {
  const parser = new ToolCallParser(t, TOOLS);
  let content = '';
  const calls: { name: string; args: unknown }[] = [];
  for (let i = 0; i < text.length; i += 3) {
    const r = parser.add(text.slice(i, i + 3));
    content += r.content;
    calls.push(...r.toolCalls.map((c) => ({ name: c.function.name, args: c.function.arguments })));
  }
  const end = parser.finish();
  content += end.content;
  calls.push(...end.toolCalls.map((c) => ({ name: c.function.name, args: c.function.arguments })));
  return { content, calls };
}

const DEFAULT_OBJECT: ToolCallSyntax['object'] = [
  '{"name": ',
  { slot: 'name' },
  ', "arguments": ',
  { slot: 'arguments' },
  '}',
];

interface Case {
  name: string;
  text: string;
  expected: Omit<ToolCallSyntax, 'argumentsKey'> & { argumentsKey?: string };
  /** What the parser gives as the arguments when not ARGS (Ollama's parser quirks, kept as they are). */
  parsedArgs?: unknown;
}

/**
 * Command R's call object names the tool in `tool_name`, not `name`: Ollama's parser (tools.go findArguments, ported
 * as it is) then takes the whole object as the arguments. Same in Ollama without a forced call.
 */
const COMMAND_R_PARSED = { tool_name: NAME, parameters: ARGS };

const CASES: Case[] = [
  {
    name: 'test model (tiny-qwen2-tools Go template, Hermes)',
    text: QWEN_TOOLS_GO_TEMPLATE,
    expected: {
      family: 'tagged',
      tag: '<tool_call>',
      open: '<tool_call>\n',
      close: '\n</tool_call>',
      object: DEFAULT_OBJECT,
      argumentsKey: 'arguments',
    },
  },
  {
    name: 'qwen3 (Hermes, one tag around the calls)',
    text: TOOL_TEMPLATES.QWEN3,
    expected: {
      family: 'tagged',
      tag: '<tool_call>',
      open: '<tool_call>\n',
      close: '\n</tool_call>',
      object: DEFAULT_OBJECT,
    },
  },
  {
    name: 'llama3-groq-tool-use (Hermes, json .Function.Arguments)',
    text: TOOL_TEMPLATES.LLAMA3_GROQ_TOOL_USE,
    expected: {
      family: 'tagged',
      tag: '<tool_call>',
      open: '<tool_call>\n',
      close: '\n</tool_call>',
      object: DEFAULT_OBJECT,
    },
  },
  {
    name: 'nemotron (<toolcall> with spaces)',
    text: TOOL_TEMPLATES.NEMOTRON,
    expected: {
      family: 'tagged',
      tag: '<toolcall>',
      open: '<toolcall> ',
      close: ' </toolcall>',
      object: DEFAULT_OBJECT,
    },
  },
  {
    name: 'llama3.2 (bare JSON, "parameters")',
    text: TOOL_TEMPLATES.LLAMA3_2,
    expected: {
      family: 'json',
      tag: '{',
      open: '',
      close: '',
      object: ['{"name": ', { slot: 'name' }, ', "parameters": ', { slot: 'arguments' }, '}'],
      argumentsKey: 'parameters',
    },
  },
  {
    name: 'mistral ([TOOL_CALLS] list)',
    text: TOOL_TEMPLATES.MISTRAL,
    expected: {
      family: 'list',
      tag: '[TOOL_CALLS] [',
      open: '[TOOL_CALLS] [',
      close: ']',
      object: DEFAULT_OBJECT,
    },
  },
  {
    // The braces are printed by actions ({{ "{" }}): not a readable object, so the default object after the tag.
    name: 'firefunction (functools[ list, fallback object)',
    text: TOOL_TEMPLATES.FIREFUNCTION,
    expected: { family: 'list', tag: 'functools[', open: 'functools[', close: ']', object: DEFAULT_OBJECT },
  },
  {
    name: 'xlam ({"tool_calls": [ … ]} after ### Response:)',
    text: TOOL_TEMPLATES.XLAM,
    expected: {
      family: 'list',
      tag: '### Response:',
      open: '### Response:\n{"tool_calls": [',
      close: ']}',
      object: DEFAULT_OBJECT,
    },
  },
  {
    name: 'command-r (library template: Action: ```json list, "tool_name"/"parameters")',
    text: loadLibraryTemplate('command-r').template,
    expected: {
      family: 'list',
      tag: 'Action: ```json\n[',
      open: 'Action: ```json\n[\n    ',
      close: '\n]',
      object: [
        '{\n        "tool_name": ',
        { slot: 'name' },
        ',\n        "parameters": ',
        { slot: 'arguments' },
        '\n    }',
      ],
      argumentsKey: 'parameters',
    },
    parsedArgs: COMMAND_R_PARSED,
  },
  {
    name: 'command-r-plus',
    text: TOOL_TEMPLATES.COMMAND_R_PLUS,
    expected: {
      family: 'list',
      tag: 'Action: ```json\n[',
      open: 'Action: ```json\n[\n    ',
      close: '\n]',
      object: [
        '{\n        "tool_name": ',
        { slot: 'name' },
        ',\n        "parameters": ',
        { slot: 'arguments' },
        '\n    }',
      ],
      argumentsKey: 'parameters',
    },
    parsedArgs: COMMAND_R_PARSED,
  },
];

describe('inferToolCallSyntax on real tool templates', () => {
  for (const c of CASES) {
    describe(c.name, () => {
      const t = GoTemplate.parse(c.text);
      const syntax = inferToolCallSyntax(t);

      it('gives the expected family, open, close and call object', () => {
        assert.deepEqual(syntax, { argumentsKey: 'arguments', ...c.expected });
        assert.equal(syntax.tag, inferToolCallTag(t), "the tag is Ollama's inferred tag");
        if (syntax.family !== 'json') assert.ok(syntax.open.startsWith(syntax.tag));
      });

      it('the call text is what the template prints for that call', () => {
        const rendered = renderCall(t);
        const call = callText(syntax, NAME, ARGS);
        assert.ok(rendered.includes(call), `${JSON.stringify(call)} not in\n${rendered}`);
      });

      it("Ollama's tool-call parser reads the call text back as that call", () => {
        const { content, calls } = parseCalls(t, callText(syntax, NAME, ARGS));
        assert.deepEqual(calls, [{ name: NAME, args: c.parsedArgs ?? ARGS }]);
        assert.equal(content.trim(), '');
      });
    });
  }
});

describe('inferToolCallSyntax fallbacks', () => {
  it('no {{ if .ToolCalls }} block (library chatml): one bare JSON object, Ollama tag "{"', () => {
    const t = GoTemplate.parse(loadLibraryTemplate('chatml').template);
    assert.deepEqual(inferToolCallSyntax(t), {
      family: 'json',
      tag: '{',
      open: '',
      close: '',
      object: DEFAULT_OBJECT,
      argumentsKey: 'arguments',
    });
  });

  it('a block that prints the call through other values: the default object after the tag', () => {
    const t = GoTemplate.parse(
      '{{ range .Messages }}{{ if .ToolCalls }}<tool_call>{{ range .ToolCalls }}{{ json .Function }}{{ end }}' +
        '</tool_call>{{ end }}{{ .Content }}{{ end }}',
    );
    assert.deepEqual(inferToolCallSyntax(t), {
      family: 'tagged',
      tag: '<tool_call>',
      open: '<tool_call>\n',
      close: '</tool_call>',
      object: DEFAULT_OBJECT,
      argumentsKey: 'arguments',
    });
  });

  it('a tag without a closing tag: close is empty', () => {
    const t = GoTemplate.parse(
      '{{ range .Messages }}{{ if .ToolCalls }}<|tool|>{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", ' +
        '"arguments": {{ .Function.Arguments }}}{{ end }}{{ end }}{{ .Content }}{{ end }}',
    );
    const s = inferToolCallSyntax(t);
    assert.equal(s.family, 'tagged');
    assert.equal(s.open, '<|tool|>');
    assert.equal(s.close, '');
    assert.deepEqual(s.object, DEFAULT_OBJECT);
  });

  it('a separator printed before every call but the first is not part of the opening', () => {
    const t = GoTemplate.parse(
      '{{ range .Messages }}{{ if .ToolCalls }}[CALLS] [{{ range $i, $c := .ToolCalls }}{{ if $i }}, {{ end }}' +
        '{"name": "{{ $c.Function.Name }}", "arguments": {{ $c.Function.Arguments }}}{{ end }}]{{ end }}{{ end }}',
    );
    const s = inferToolCallSyntax(t);
    assert.equal(s.family, 'list');
    assert.equal(s.open, '[CALLS] [');
    assert.equal(s.close, ']');
  });
});
