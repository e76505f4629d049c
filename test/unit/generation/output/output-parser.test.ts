import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ParsedDelta, RenderedOutputParser } from '../../../../src/generation/output';
import { GoTemplate, TemplateTool, ThinkingParser, ToolCallParser } from '../../../../src/templates';

const TOOLS: TemplateTool[] = ['get_weather', 'get_time'].map((name) => ({
  type: 'function',
  function: { name, parameters: { type: 'object', properties: {} } },
}));
const QWEN_LIKE = GoTemplate.parse(
  '{{- range .Messages }}{{ if .ToolCalls }}<tool_call>\n{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", ' +
    '"arguments": {{ .Function.Arguments }}}\n{{ end }}</tool_call>{{ else }}{{ .Content }}{{ end }}{{ end }}',
);

/** A rendered-mode parser with thinking tags and tools, as go-render builds it. */
function parser(startInThinking = false): RenderedOutputParser {
  return new RenderedOutputParser(
    new ThinkingParser('<think>', '</think>', startInThinking),
    new ToolCallParser(QWEN_LIKE, TOOLS),
  );
}

/** All deltas of `chunks` and the finish, merged (call ids dropped). */
function parseAll(p: RenderedOutputParser, chunks: string[]): { content: string; thinking: string; calls: unknown[] } {
  const all = { content: '', thinking: '', calls: [] as unknown[] };
  const take = (d: ParsedDelta) => {
    all.content += d.content;
    all.thinking += d.thinking;
    all.calls.push(...d.toolCalls.map((c) => c.function));
  };
  for (const c of chunks) take(p.add(c));
  take(p.finish());
  return all;
}

/** Pseudo-random chunk lengths of 1..6 (deterministic). */
function tokens(text: string, seed: number): string[] {
  const out: string[] = [];
  let x = seed;
  for (let i = 0; i < text.length; ) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    const n = 1 + (x % 6);
    out.push(text.slice(i, i + n));
    i += n;
  }
  return out;
}

const OUTPUTS = [
  '<think>\nI should look up the weather.\n</think>\n\nLet me check. <tool_call>\n{"name": "get_weather", ' +
    '"arguments": {"city": "Paris"}}\n</tool_call>',
  '  <think>a </thi s</think>Just an answer with {"braces"} and <tool text.',
  'No thinking at all. <tool_call>{"name": "get_time", "arguments": {"tz": "UTC"}}</tool_call><tool_call>' +
    '{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call> done',
  '<think>only thinking, cut off </thi',
];

describe('RenderedOutputParser fed token by token', () => {
  it('gives what parsing the whole text at once gives: every chunking of thinking, content and tool calls', () => {
    for (const text of OUTPUTS) {
      const whole = parseAll(parser(), [text]);
      assert.deepEqual(parseAll(parser(), [...text]), whole, `characters of ${JSON.stringify(text)}`);
      for (let i = 1; i < text.length; i++) {
        assert.deepEqual(parseAll(parser(), [text.slice(0, i), text.slice(i)]), whole, `split at ${i}`);
      }
      for (let seed = 1; seed <= 5; seed++) assert.deepEqual(parseAll(parser(), tokens(text, seed)), whole);
    }
  });

  it('starts inside thinking when the prompt ended with the opening tag', () => {
    const text = '\n step 1 </think> answer <tool_call>{"name": "get_time", "arguments": {}}</tool_call>';
    const whole = parseAll(parser(true), [text]);
    assert.deepEqual(whole, {
      thinking: 'step 1 ',
      content: 'answer ',
      calls: [{ index: 0, name: 'get_time', arguments: {} }],
    });
    assert.deepEqual(parseAll(parser(true), [...text]), whole);
  });

  it('parses a long answer (about 4,000 tokens) with thinking and a long tool call like the whole text', () => {
    const thinking = 'thinking about the question step by step, '.repeat(100);
    const args = Array.from({ length: 400 }, (_, i) => `"line${i}": "text ${i} {x} \\"q\\""`).join(', ');
    const text =
      `<think>${thinking}</think>` +
      'Here is the answer. '.repeat(150) +
      `<tool_call>\n{"name": "get_weather", "arguments": {${args}}}\n</tool_call>`;
    const chunks = tokens(text, 9);
    assert.ok(chunks.length > 4000);
    const got = parseAll(parser(), chunks);
    assert.deepEqual(got, parseAll(parser(), [text]));
    assert.equal(got.calls.length, 1);
    assert.equal(got.thinking, thinking);
  });
});
