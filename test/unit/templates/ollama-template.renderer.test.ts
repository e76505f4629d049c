import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { GoTemplate, TemplateTool, collate, renderPrompt } from '../../../src/templates';
import { TEMPLATE_ASSETS_DIR } from '../../../src/templates/template-library';

const WEATHER: TemplateTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the <current> weather',
    parameters: {
      type: 'object',
      required: ['city'],
      properties: {
        unit: { type: 'string', enum: ['c', 'f'] },
        city: { type: 'string', description: 'The city' },
      },
    },
  },
};

describe('collate', () => {
  it('merges consecutive same-role messages except tool messages, joins systems', () => {
    const { system, messages } = collate([
      { role: 'system', content: 's1' },
      { role: 'system', content: 's2' },
      { role: 'user', content: 'u1' },
      { role: 'user', content: 'u2' },
      { role: 'tool', content: 't1' },
      { role: 'tool', content: 't2' },
      { role: 'system', content: 's3' },
    ]);
    assert.equal(system, 's1\n\ns2\n\ns3');
    assert.deepEqual(
      messages.map((m) => [m.role, m.content]),
      [
        ['system', 's1\n\ns2'],
        ['user', 'u1\n\nu2'],
        ['tool', 't1'],
        ['tool', 't2'],
        ['system', 's3'],
      ],
    );
  });
  it('does not mutate its input', () => {
    const input = [
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
    ];
    collate(input);
    assert.equal(input[0].content, 'a');
  });
});

describe('renderPrompt: messages style', () => {
  it('exposes .System, collated .Messages with their fields, .Response, think fields', () => {
    const t = GoTemplate.parse(
      '[{{ .System }}]{{ range .Messages }}<{{ .Role }}:{{ .Content }}|{{ .Thinking }}|{{ .ToolName }}>{{ end }}' +
        '{{ .Response }}|{{ .Think }}|{{ .ThinkLevel }}|{{ .IsThinkSet }}|{{ .Prompt }}',
    );
    const out = renderPrompt(t, {
      messages: [
        { role: 'system', content: 'S1' },
        { role: 'system', content: 'S2' },
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'yo', thinking: 'hmm' },
        { role: 'tool', content: '42', toolName: 'calc' },
      ],
      think: true,
      thinkLevel: 'medium',
      isThinkSet: true,
    });
    assert.equal(
      out,
      '[S1\n\nS2]<system:S1\n\nS2||><user:hi||><assistant:yo|hmm|><tool:42||calc>|true|medium|true|<no value>',
    );
  });
  it('prints tool-call arguments and tool lists as JSON; ranges over tool properties', () => {
    const t = GoTemplate.parse(
      '{{ if .Tools }}TOOLS {{ .Tools }}\n{{ range .Tools }}{{ .Function.Name }}({{ range $k, $v := .Function.Parameters.Properties }}{{ $k }}: {{ $v.Type }} {{ end }}){{ end }}\n{{ end }}' +
        '{{ range .Messages }}{{ if .ToolCalls }}{{ range .ToolCalls }}{{ .Function.Index }} {{ .Function.Name }} {{ .Function.Arguments }}{{ end }}{{ end }}{{ end }}',
    );
    const out = renderPrompt(t, {
      messages: [
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ function: { index: 0, name: 'get_weather', arguments: { unit: 'c', city: 'Paris' } } }],
        },
      ],
      tools: [WEATHER],
    });
    assert.equal(
      out,
      'TOOLS [{"type":"function","function":{"name":"get_weather","description":"Get the \\u003ccurrent\\u003e weather",' +
        '"parameters":{"type":"object","required":["city"],"properties":{"city":{"type":"string","description":"The city"},' +
        '"unit":{"type":"string","enum":["c","f"]}}}}}]\n' +
        'get_weather(city: string unit: string )\n' +
        '0 get_weather {"city":"Paris","unit":"c"}',
    );
  });
  it('renders command-r with tools', () => {
    const t = GoTemplate.parse(readFileSync(join(TEMPLATE_ASSETS_DIR, 'command-r.gotmpl'), 'utf8'));
    const out = renderPrompt(t, {
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ function: { index: 0, name: 'get_weather', arguments: { city: 'Paris' } } }],
        },
        { role: 'tool', content: 'sunny' },
      ],
      tools: [WEATHER],
    });
    assert.match(out, /def get_weather\(city: string, unit: string, \) -> List\[Dict\]:/);
    assert.match(out, /city \(string\): The city/);
    assert.match(out, /"tool_name": "get_weather",\n {8}"parameters": \{"city":"Paris"\}/);
    assert.match(out, /<\|SYSTEM_TOKEN\|><results>\nconsole_output: sunny\n<\/results>/);
  });
  it('inserts image markers', () => {
    const t = GoTemplate.parse('{{ range .Messages }}{{ .Content }};{{ end }}');
    const out = renderPrompt(t, {
      messages: [
        { role: 'user', content: 'look', images: ['a'] },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'A [img] and [img]', images: ['b', 'c'] },
      ],
    });
    assert.equal(out, '[img-0]look;ok;A [img-1] and [img-2];');
  });
});

describe('renderPrompt: legacy prompt/response style', () => {
  const t = GoTemplate.parse(
    '{{ if .System }}<|system|>{{ .System }}{{ end }}<|user|>{{ .Prompt }}<|assistant|>{{ .Response }}<|end|>',
  );
  it('renders each completed turn in full and cuts the last one at .Response', () => {
    const out = renderPrompt(t, {
      messages: [
        { role: 'system', content: 'S' },
        { role: 'user', content: 'U1' },
        { role: 'assistant', content: 'A1' },
        { role: 'user', content: 'U2' },
      ],
    });
    assert.equal(out, '<|system|>S<|user|>U1<|assistant|>A1<|end|><|user|>U2<|assistant|>');
  });
  it('continues a trailing assistant message (prefill)', () => {
    const out = renderPrompt(t, {
      messages: [
        { role: 'user', content: 'U1' },
        { role: 'assistant', content: 'Sure, ' },
      ],
    });
    assert.equal(out, '<|user|>U1<|assistant|>Sure, ');
  });
  it('appends {{ .Response }} to templates that mention neither .Messages nor .Response', () => {
    const p = GoTemplate.parse('Q: {{ .Prompt }} A:');
    assert.equal(
      renderPrompt(p, {
        messages: [
          { role: 'user', content: 'one' },
          { role: 'assistant', content: 'two' },
          { role: 'user', content: 'three' },
        ],
      }),
      'Q: one A:twoQ: three A:',
    );
  });
  it('passes the prompt through with the default template', () => {
    assert.equal(
      renderPrompt(GoTemplate.parse('{{ .Prompt }}'), { messages: [{ role: 'user', content: 'raw text' }] }),
      'raw text',
    );
  });
});

describe('renderPrompt: fill-in-the-middle', () => {
  it('executes with .Prompt and .Suffix', () => {
    const t = GoTemplate.parse('<PRE> {{ .Prompt }} <SUF>{{ .Suffix }} <MID>');
    assert.equal(
      renderPrompt(t, { messages: [], prompt: 'def f(', suffix: 'return x' }),
      '<PRE> def f( <SUF>return x <MID>',
    );
  });
  it('uses the chat path when the suffix is empty', () => {
    const t = GoTemplate.parse('{{ if .Suffix }}FIM{{ else }}{{ range .Messages }}{{ .Content }}{{ end }}{{ end }}');
    assert.equal(renderPrompt(t, { messages: [{ role: 'user', content: 'chat' }], prompt: 'p', suffix: '' }), 'chat');
  });
});
