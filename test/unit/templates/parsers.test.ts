import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  GoTemplate,
  TemplateTool,
  ThinkingParser,
  ToolCallChunk,
  ToolCallParser,
  inferThinkingTags,
  inferToolCallTag,
} from '../../../src/templates';

const tool = (name: string): TemplateTool => ({
  type: 'function',
  function: { name, parameters: { type: 'object', properties: {} } },
});
const TOOLS = [tool('get_weather'), tool('get_time'), tool('get')];

const QWEN_LIKE = GoTemplate.parse(
  '{{- range .Messages }}{{ if .ToolCalls }}<tool_call>\n{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", ' +
    '"arguments": {{ .Function.Arguments }}}\n{{ end }}</tool_call>{{ else }}{{ .Content }}{{ end }}{{ end }}',
);
const MISTRAL_LIKE = GoTemplate.parse(
  '{{ range .Messages }}{{ if eq .Role "assistant" }}{{ if .Content }}{{ .Content }}{{ else if .ToolCalls }}[TOOL_CALLS] [' +
    '{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", "arguments": {{ json .Function.Arguments }}}{{ end }}]{{ end }}{{ end }}{{ end }}',
);
const JSON_ONLY = GoTemplate.parse(
  '{{ range .Messages }}{{ if .ToolCalls }}{{ range .ToolCalls }}{"name": "{{ .Function.Name }}"}{{ end }}{{ end }}{{ end }}',
);

function feed(p: ToolCallParser, chunks: string[]): ToolCallChunk {
  const all: ToolCallChunk = { content: '', toolCalls: [] };
  for (const c of [...chunks.map((ch) => p.add(ch)), p.finish()]) {
    all.content += c.content;
    all.toolCalls.push(...c.toolCalls);
  }
  return all;
}

function chars(s: string): string[] {
  return [...s];
}

describe('tool-call tag inference', () => {
  it('takes the first text of the .ToolCalls block, cut at {', () => {
    assert.equal(inferToolCallTag(QWEN_LIKE), '<tool_call>');
    assert.equal(inferToolCallTag(MISTRAL_LIKE), '[TOOL_CALLS] [');
    assert.equal(inferToolCallTag(JSON_ONLY), '{');
    assert.equal(inferToolCallTag(GoTemplate.parse('{{ .Prompt }}')), '{');
  });
});

describe('ToolCallParser', () => {
  it('parses a call after a tag split across chunks, with content before the tag', () => {
    const p = new ToolCallParser(QWEN_LIKE, TOOLS);
    const r1 = p.add('Let me check. <tool');
    assert.deepEqual(r1, { content: 'Let me check. ', toolCalls: [] });
    const r2 = p.add('_call>\n{"name": "get_weather", "argu');
    assert.deepEqual(r2, { content: '', toolCalls: [] });
    const r3 = p.add('ments": {"city": "Paris"}}\n</tool_call>');
    assert.equal(r3.content, '');
    assert.equal(r3.toolCalls.length, 1);
    assert.equal(r3.toolCalls[0].function.name, 'get_weather');
    assert.deepEqual(r3.toolCalls[0].function.arguments, { city: 'Paris' });
    assert.equal(r3.toolCalls[0].function.index, 0);
    assert.match(r3.toolCalls[0].id, /^call_[a-z0-9]{8}$/);
  });
  it('works character by character and yields several calls with increasing indexes', () => {
    const text =
      '<tool_call>{"name": "get_time", "arguments": {"tz": "UTC"}}</tool_call>\n' +
      '<tool_call>{"name": "get_weather", "parameters": {"city": "Oslo"}}</tool_call>';
    const r = feed(new ToolCallParser(QWEN_LIKE, TOOLS), chars(text));
    assert.deepEqual(
      r.toolCalls.map((c) => [c.function.index, c.function.name, c.function.arguments]),
      [
        [0, 'get_time', { tz: 'UTC' }],
        [1, 'get_weather', { city: 'Oslo' }],
      ],
    );
    assert.equal(r.content, '');
    assert.notEqual(r.toolCalls[0].id, r.toolCalls[1].id);
  });
  it('prefers the longest name at the earliest position and waits on a partial name', () => {
    const p = new ToolCallParser(QWEN_LIKE, TOOLS);
    assert.deepEqual(p.add('<tool_call>{"name": "get').toolCalls, []);
    const r = p.add('_weather", "arguments": {}}');
    assert.equal(r.toolCalls[0].function.name, 'get_weather');
  });
  it('accepts arguments given as a JSON string and {"<tool>": {...}} wrappers', () => {
    const a = feed(new ToolCallParser(MISTRAL_LIKE, TOOLS), [
      '[TOOL_CALLS] [{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}]',
    ]);
    assert.deepEqual(a.toolCalls[0].function.arguments, { city: 'Rome' });
    const b = feed(new ToolCallParser(QWEN_LIKE, TOOLS), ['<tool_call>{"get_time": {"tz": "CET"}}']);
    assert.deepEqual(b.toolCalls[0].function.arguments, { tz: 'CET' });
  });
  it('{ tag: parses only when the output starts with {', () => {
    const r = feed(new ToolCallParser(JSON_ONLY, TOOLS), [' {"name": "get_time", ', '"arguments": {"tz": "UTC"}}']);
    assert.equal(r.toolCalls.length, 1);
    assert.deepEqual(r.toolCalls[0].function.arguments, { tz: 'UTC' });

    const plain = feed(new ToolCallParser(JSON_ONLY, TOOLS), ['The answer ', 'is {"name": "get_time"}']);
    assert.deepEqual(plain, { content: 'The answer is {"name": "get_time"}', toolCalls: [] });
  });
  it('{ tag: a JSON object that is not a tool call is returned as content', () => {
    const r = feed(new ToolCallParser(JSON_ONLY, TOOLS), ['{"a": 1}', ' tail']);
    assert.deepEqual(r, { content: '{"a": 1} tail', toolCalls: [] });
  });
  it('returns buffered text as content when the stream ends inside the tag state', () => {
    const p = new ToolCallParser(QWEN_LIKE, TOOLS);
    assert.deepEqual(p.add('x <tool_call>not a call'), { content: 'x ', toolCalls: [] });
    assert.deepEqual(p.finish(), { content: '<tool_call>not a call', toolCalls: [] });
  });
  it('flushes a held-back partial tag at the end', () => {
    const p = new ToolCallParser(QWEN_LIKE, TOOLS);
    assert.deepEqual(p.add('a <tool'), { content: 'a ', toolCalls: [] });
    assert.deepEqual(p.finish(), { content: '<tool', toolCalls: [] });
  });
});

describe('thinking tag inference', () => {
  it('finds the tags around .Thinking inside range .Messages', () => {
    const t = GoTemplate.parse(
      '{{- range $i, $_ := .Messages }}{{ if and (eq .Role "assistant") .Thinking }}<think>\n{{ .Thinking }}\n</think>\n' +
        '{{ end }}{{ .Content }}{{ end }}',
    );
    assert.deepEqual(inferThinkingTags(t), { open: '<think>', close: '</think>' });
  });
  it('ignores .Thinking outside a range over .Messages and templates without it', () => {
    assert.equal(inferThinkingTags(GoTemplate.parse('<think>{{ .Thinking }}</think>')), null);
    assert.equal(inferThinkingTags(GoTemplate.parse('{{ range .Messages }}{{ .Content }}{{ end }}')), null);
  });
});

describe('ThinkingParser', () => {
  function split(p: ThinkingParser, chunks: string[]): { thinking: string; content: string } {
    let thinking = '';
    let content = '';
    for (const c of chunks) {
      const r = p.add(c);
      thinking += r.thinking;
      content += r.content;
    }
    const f = p.finish();
    return { thinking: thinking + f.thinking, content: content + f.content };
  }
  it('splits thinking from content, swallowing whitespace after both tags', () => {
    const p = new ThinkingParser('<think>', '</think>');
    assert.deepEqual(split(p, ['  <think>\n  I should ', 'add.\n</think>\n\n The answer.']), {
      thinking: 'I should add.\n',
      content: 'The answer.',
    });
  });
  it('handles tags split across chunks (character by character)', () => {
    const p = new ThinkingParser('<think>', '</think>');
    assert.deepEqual(split(p, chars('<think>abc</think>def')), { thinking: 'abc', content: 'def' });
  });
  it('holds back a partial closing tag until disambiguated', () => {
    const p = new ThinkingParser('<think>', '</think>');
    assert.deepEqual(p.add('<think>a </thi'), { thinking: 'a ', content: '' });
    assert.deepEqual(p.add('s is not the end</think>x'), { thinking: '</this is not the end', content: 'x' });
  });
  it('treats output without the opening tag as content (whitespace kept)', () => {
    const p = new ThinkingParser('<think>', '</think>');
    assert.deepEqual(split(p, ['  Hello', ' <think>no</think>']), {
      thinking: '',
      content: '  Hello <think>no</think>',
    });
  });
  it('starts inside thinking when the prompt ended with the opening tag', () => {
    const p = new ThinkingParser('<think>', '</think>', true);
    assert.deepEqual(split(p, ['\n  step 1', '</th', 'ink>  done']), { thinking: 'step 1', content: 'done' });
  });
});

describe('ThinkingParser fed token by token', () => {
  function split(p: ThinkingParser, chunks: string[]): { thinking: string; content: string } {
    const out = { thinking: '', content: '' };
    for (const r of [...chunks.map((c) => p.add(c)), p.finish()]) {
      out.thinking += r.thinking;
      out.content += r.content;
    }
    return out;
  }
  const texts = [
    '  <think>\n  I should add.\n</think>\n\n The answer.',
    '<think>a </thi s</think>x</think>y',
    '  Hello <think>no</think>',
    '<thin',
    '<think>never closed </th',
    '\n\n',
  ];
  it('gives the whole text result for every split and character by character', () => {
    for (const text of texts) {
      const whole = split(new ThinkingParser('<think>', '</think>'), [text]);
      assert.deepEqual(split(new ThinkingParser('<think>', '</think>'), chars(text)), whole);
      for (let i = 1; i < text.length; i++) {
        const parts = [text.slice(0, i), text.slice(i)];
        assert.deepEqual(split(new ThinkingParser('<think>', '</think>'), parts), whole, `${text} at ${i}`);
      }
    }
  });
  it('streams a long thinking section (4,000 chunks) like the whole text', () => {
    const text = '<think>' + 'step </th and more '.repeat(1000) + '</think> answer';
    const chunks = text.match(/.{1,4}/gs) ?? [];
    assert.ok(chunks.length > 4000);
    const p = new ThinkingParser('<think>', '</think>');
    assert.deepEqual(split(p, chunks), split(new ThinkingParser('<think>', '</think>'), [text]));
  });
});

describe('ThinkingParser: a long run of leading whitespace', () => {
  it('keeps it (as content) or drops it (before the tag) exactly as when parsed whole', () => {
    const ws = ' \n\t\u00a0\u0085'.repeat(1000);
    for (const text of [ws + 'Hello', ws + '<think>t</think>c', ws, ws + '<thi', ws + '<thx']) {
      const whole = new ThinkingParser('<think>', '</think>');
      const w = whole.add(text);
      const wf = whole.finish();
      const p = new ThinkingParser('<think>', '</think>');
      const out = { thinking: '', content: '' };
      for (const r of [...(text.match(/[^]{1,3}/g) ?? []).map((c) => p.add(c)), p.finish()]) {
        out.thinking += r.thinking;
        out.content += r.content;
      }
      assert.deepEqual(out, { thinking: w.thinking + wf.thinking, content: w.content + wf.content });
    }
  });
});
