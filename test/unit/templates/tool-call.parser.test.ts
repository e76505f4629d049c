import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GoTemplate, TemplateTool, ToolCallChunk, ToolCallParser } from '../../../src/templates';
import { ReferenceToolCallParser } from './tool-call.parser.reference';

const tool = (name: string): TemplateTool => ({
  type: 'function',
  function: { name, parameters: { type: 'object', properties: {} } },
});
const TOOLS = [tool('get_weather'), tool('get_time'), tool('get'), tool('')];

const QWEN_LIKE = GoTemplate.parse(
  '{{- range .Messages }}{{ if .ToolCalls }}<tool_call>\n{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", ' +
    '"arguments": {{ .Function.Arguments }}}\n{{ end }}</tool_call>{{ else }}{{ .Content }}{{ end }}{{ end }}',
);
const MISTRAL_LIKE = GoTemplate.parse(
  '{{ range .Messages }}{{ if .ToolCalls }}[TOOL_CALLS] [{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", ' +
    '"arguments": {{ json .Function.Arguments }}}{{ end }}]{{ end }}{{ end }}',
);
const JSON_ONLY = GoTemplate.parse(
  '{{ range .Messages }}{{ if .ToolCalls }}{{ range .ToolCalls }}{"name": "{{ .Function.Name }}"}{{ end }}{{ end }}{{ end }}',
);
const TEMPLATES = { qwen: QWEN_LIKE, mistral: MISTRAL_LIKE, json: JSON_ONLY };

/** A chunk without the random call ids. */
function strip(c: ToolCallChunk): unknown {
  return { content: c.content, toolCalls: c.toolCalls.map((t) => t.function) };
}

/** Every add() and the finish() of a parser fed `chunks`, ids stripped. */
function run(p: { add(c: string): ToolCallChunk; finish(): ToolCallChunk }, chunks: string[]): unknown[] {
  return [...chunks.map((c) => strip(p.add(c))), strip(p.finish())];
}

/** Asserts that the incremental parser gives the re-scanning parser's results for each of these chunkings. */
function same(template: GoTemplate, chunkings: string[][], tools = TOOLS): void {
  for (const chunks of chunkings) {
    const got = run(new ToolCallParser(template, tools), chunks);
    const want = run(new ReferenceToolCallParser(template, tools), chunks);
    assert.deepEqual(got, want, `chunks ${JSON.stringify(chunks)}`);
  }
}

/** The text whole, one character per chunk, and split in two at every position. */
function chunkings(text: string): string[][] {
  const out = [[text], [...text]];
  for (let i = 1; i < text.length; i++) out.push([text.slice(0, i), text.slice(i)]);
  return out;
}

/** Pseudo-random chunk lengths of 1..7 (deterministic). */
function tokens(text: string, seed: number): string[] {
  const out: string[] = [];
  let x = seed;
  for (let i = 0; i < text.length; ) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    const n = 1 + (x % 7);
    out.push(text.slice(i, i + n));
    i += n;
  }
  return out;
}

const OUTPUTS: [keyof typeof TEMPLATES, string][] = [
  ['qwen', 'Let me check. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'],
  [
    'qwen',
    '<tool_call>{"name": "get_time", "arguments": {"tz": "UTC"}}</tool_call>\n<tool_call>{"name": "get_weather", ' +
      '"parameters": "{\\"city\\": \\"Oslo\\"}"}</tool_call> and then some text after the calls',
  ],
  ['qwen', '<tool_call>{"get_weather": {"city": "a \\"}\\" b"}} {not json} {"x": [1, {"y": 2}]} get_time'],
  ['qwen', '<tool_call>{"name": "get_weath'],
  ['qwen', 'no tags at all, only <tool text <tool_'],
  ['mistral', '[TOOL_CALLS] [{"name": "get", "arguments": {"q": "}{"}}, {"name": "get_time", "arguments": {}}]'],
  ['mistral', '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Rome"}}] trailing'],
  ['json', '  {"name": "get_weather", "parameters": {"city": "Lima"}} and text after'],
  ['json', '{"answer": 42, "list": [1, 2, {"k": "v"}]}'],
  ['json', 'Plain answer that mentions get_weather and {"name": "get"}.'],
  ['json', '{"name": "get_time", "arguments": {"tz": "\\\\"}}{"name": "get", "arguments": []}'],
  ['json', '\n\n{"name": "nope", "arguments": {}}'],
];

describe('ToolCallParser (incremental) against the re-scanning parser', () => {
  it('gives the same chunk results whole, character by character and split at every position', () => {
    for (const [template, text] of OUTPUTS) same(TEMPLATES[template], chunkings(text));
  });

  it('gives the same results for token-like chunks of many lengths', () => {
    for (const [template, text] of OUTPUTS) {
      same(
        TEMPLATES[template],
        [1, 2, 3, 4, 5].map((seed) => tokens(text, seed)),
      );
    }
  });

  it('splits a tool call JSON at every pair of positions the same way', () => {
    const text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Pa\\"ris"}}</tool_call>x';
    const chunkingsOf3: string[][] = [];
    for (let i = 1; i < text.length; i++) {
      for (let j = i + 1; j < text.length; j++) chunkingsOf3.push([text.slice(0, i), text.slice(i, j), text.slice(j)]);
    }
    same(QWEN_LIKE, chunkingsOf3);
  });

  it('waits on a partial tool name the same way (prefix of a longer name at the end)', () => {
    same(QWEN_LIKE, [
      ['<tool_call>{"arguments": {"a": 1}} get', '_weather'],
      ['<tool_call>{"a": 1} get_', 'time'],
    ]);
  });

  it('handles a long call and long text after it (4,000 tokens) the same way, with the same calls', () => {
    const args = Array.from({ length: 600 }, (_, i) => `"k${i}": "value ${i} with {braces} and \\"quotes\\""`);
    const call = `<tool_call>\n{"name": "get_weather", "arguments": {${args.join(', ')}}}\n</tool_call>`;
    const after = ' and then a long tail of words that follow the call'.repeat(200);
    const text = 'Some words first. ' + call + after;
    const chunks = tokens(text, 7);
    assert.ok(chunks.length > 4000);
    same(QWEN_LIKE, [chunks]);
    const p = new ToolCallParser(QWEN_LIKE, TOOLS);
    const calls = [...chunks.map((c) => p.add(c)), p.finish()].flatMap((c) => c.toolCalls);
    assert.equal(calls.length, 1);
    assert.equal(Object.keys(calls[0].function.arguments).length, 600);
  });

  it('handles a long JSON answer under the { tag the same way', () => {
    const text = JSON.stringify({ items: Array.from({ length: 800 }, (_, i) => ({ id: i, name: `item ${i}` })) });
    same(JSON_ONLY, [tokens(text, 3), tokens(text, 11)]);
  });
});
