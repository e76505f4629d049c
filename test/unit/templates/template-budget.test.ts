import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  DEFAULT_TEMPLATE_LIMITS,
  GoTemplate,
  TemplateBudget,
  TemplateBudgetError,
  TemplateError,
  TemplateMessage,
  TemplateTool,
  renderLimits,
  renderPrompt,
} from '../../../src/templates';
import { TEMPLATE_ASSETS_DIR } from '../../../src/templates/template-library';
import {
  TEMPLATE_BASE_OUTPUT,
  TEMPLATE_BASE_STEPS,
  TEMPLATE_STEPS_PER_MESSAGE,
} from '../../../src/templates/template-budget';
import * as TOOL_TEMPLATES from './tool-templates';

/** Executes `src` with `data` under the default budget; returns the output or the error thrown. */
function run(src: string, data: unknown = {}): string | Error {
  try {
    return GoTemplate.parse(src).execute(data);
  } catch (e) {
    return e as Error;
  }
}

function assertBudget(r: string | Error, resource: 'steps' | 'output'): void {
  assert.ok(r instanceof TemplateBudgetError, `expected a budget error, got ${String(r).slice(0, 200)}`);
  assert.ok(r instanceof TemplateError);
  assert.equal(r.resource, resource);
  const unit = resource === 'steps' ? 'steps' : 'characters of output';
  assert.equal(r.message, `template: execution budget exceeded: more than ${r.limit} ${unit}`);
}

describe('template execution budget: hostile templates stop with `template: execution budget exceeded`', () => {
  it('integer range of 1e11', () => {
    assertBudget(run('{{range 100000000000}}{{end}}'), 'steps');
    assertBudget(run('{{range $i := 100000000000}}{{if eq $i -1}}x{{end}}{{end}}'), 'steps');
  });

  it('nested ranges (each small, the product huge), also over the data', () => {
    assertBudget(run('{{range 100000}}{{range 100000}}{{end}}{{end}}'), 'steps');
    const list = Array.from({ length: 1000 }, (_, i) => BigInt(i));
    assertBudget(run('{{range .}}{{range $}}{{range $}}{{end}}{{end}}{{end}}', list), 'steps');
    const map = Object.fromEntries(list.map((i) => [`k${i}`, i]));
    assertBudget(run('{{range .}}{{range $}}{{range $}}{{end}}{{end}}{{end}}', map), 'steps');
  });

  it('a loop that breaks out of a long list at once is charged per iteration of the outer loop', () => {
    const list = Array.from({ length: 10000 }, (_, i) => BigInt(i));
    assertBudget(run('{{range 100000000}}{{range $}}{{break}}{{end}}{{end}}', list), 'steps');
  });

  it('recursive {{template}} calls: a binary tree of calls is stopped by steps, a chain by the depth limit', () => {
    const tree =
      '{{define "a"}}{{if lt (len .) 40}}{{template "a" (print . "x")}}{{template "a" (print . "y")}}{{end}}' +
      '{{end}}{{template "a" ""}}';
    assertBudget(run(tree), 'steps');
    const chain = run('{{define "a"}}{{template "a" .}}{{end}}{{template "a" .}}');
    assert.ok(chain instanceof TemplateError && /exceeded maximum template depth/.test(chain.message));
  });

  it('output blow-up: nested ranges printing a long string', () => {
    assertBudget(run(`{{range 100000}}{{range 100000}}${'x'.repeat(100)}{{end}}{{end}}`), 'output');
    assertBudget(run('{{range 100000}}{{range 100000}}{{"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}{{end}}{{end}}'), 'output');
  });

  it('a string doubled in a variable and never printed is charged as produced', () => {
    const r = run('{{$x := "xxxxxxxx"}}{{range 60}}{{$x = printf "%s%s" $x $x}}{{end}}{{len $x}}');
    assertBudget(r, 'output');
  });

  it('calls on long strings are charged by their length', () => {
    const big = 'a'.repeat(1 << 20);
    assertBudget(run('{{range 100000000}}{{if lt $.A $.B}}{{end}}{{end}}', { A: big, B: big + 'b' }), 'steps');
    assertBudget(run('{{range 100000000}}{{len $.A}}{{end}}', { A: big }), 'steps');
  });

  it("printf refuses widths and precisions over 1e6 as Go's fmt does", () => {
    assert.equal(run('{{printf "%*d" 10000000 1}}'), '%!(BADWIDTH)1');
    assert.equal(run('{{printf "%.*d" 10000000 1}}'), '%!(BADPREC)1');
    assert.equal(run('{{printf "%.*d" -1 5}}'), '%!(BADPREC)5');
    assert.equal(run('{{printf "%100000000000d" 1}}'), '%!(NOVERB)%!(EXTRA int=1)');
    assert.equal(run('{{printf "%5d|%-4s|%.2f" 42 "ab" 3.14159}}'), '   42|ab  |3.14');
    assert.equal(run('{{printf "%*d" 500000 1}}').toString().length, 500000);
  });

  it('the budget is shared by all executions of one legacy render (one per turn)', () => {
    const t = GoTemplate.parse('{{range 40000}}{{end}}{{.Prompt}} {{.Response}}');
    assert.equal(renderPrompt(t, { messages: [{ role: 'user', content: 'hi' }] }), 'hi ');
    const turns: TemplateMessage[] = [];
    for (let i = 0; i < 10; i++) turns.push({ role: 'user', content: `q${i}` }, { role: 'assistant', content: 'a' });
    assertBudget(
      (() => {
        try {
          return renderPrompt(t, { messages: turns });
        } catch (e) {
          return e as Error;
        }
      })(),
      'steps',
    );
  });
});

describe('template execution budget: semantics and limits', () => {
  it('break and continue keep their meaning (also in nested ranges and in a range else)', () => {
    assert.equal(run('{{range 6}}{{if eq . 1}}{{continue}}{{end}}{{if eq . 4}}{{break}}{{end}}{{.}}{{end}}'), '023');
    assert.equal(
      run('{{range 3}}{{$o := .}}{{range 3}}{{if eq . 1}}{{break}}{{end}}{{$o}}{{.}} {{end}}{{end}}'),
      '00 10 20 ',
    );
    assert.equal(run('{{range 3}}{{with .}}{{if eq . 1}}{{continue}}{{end}}{{end}}{{.}}{{end}}'), '02');
    assert.equal(
      run('{{range 3}}{{range $.E}}{{else}}{{if eq . 1}}{{break}}{{end}}{{end}}{{.}}{{end}}', { E: [] }),
      '0',
    );
  });

  it('maps range in the UTF-8 byte order of their keys (a key above U+FFFF after U+FF01), the same each time', () => {
    const m = { '\u{1F600}': 1n, '\uFF01': 2n, b: 3n, a: 4n };
    assert.equal(run('{{range $k, $v := .}}{{$v}}{{end}}|{{range $k, $v := .}}{{$v}}{{end}}', m), '4321|4321');
  });

  it('a budget counts steps and characters, and stops at its limits', () => {
    const b = new TemplateBudget({ steps: 1000, output: 10 });
    assert.equal(GoTemplate.parse('{{range 3}}ab{{end}}').execute({}, b), 'ababab');
    assert.ok(b.used.steps > 3 && b.used.steps < 20);
    assert.equal(b.used.output, 6);
    assert.throws(() => GoTemplate.parse('{{range 3}}ab{{end}}').execute({}, b), TemplateBudgetError);
    assert.throws(
      () => GoTemplate.parse('{{range 10000}}{{end}}').execute({}, new TemplateBudget({ steps: 1000, output: 1e6 })),
      (e: unknown) => e instanceof TemplateBudgetError && e.resource === 'steps' && e.limit === 1000,
    );
  });

  it('render limits grow with messages, tools and input size', () => {
    assert.deepEqual(renderLimits({ messages: [] }), { ...DEFAULT_TEMPLATE_LIMITS });
    const msg: TemplateMessage = { role: 'user', content: 'x'.repeat(1000) };
    const one = renderLimits({ messages: [msg] });
    assert.equal(one.steps, TEMPLATE_BASE_STEPS + TEMPLATE_STEPS_PER_MESSAGE);
    assert.ok(one.output > TEMPLATE_BASE_OUTPUT + 4000);
    const tools = renderLimits({ messages: [], tools: [tool(0), tool(1)] });
    assert.ok(tools.steps > TEMPLATE_BASE_STEPS + 2 * 1000);
  });
});

function tool(i: number): TemplateTool {
  return {
    type: 'function',
    function: {
      name: `tool_${i}`,
      description: `Does thing ${i}`,
      parameters: {
        type: 'object',
        required: ['a'],
        properties: {
          a: { type: 'string', description: 'first' },
          b: { type: 'integer', enum: [1, 2] },
          c: { type: 'array', items: { type: 'string' } },
        },
      },
    },
  };
}

/** A long conversation with system prompt, thinking, tool calls and tool answers. */
function conversation(n: number): TemplateMessage[] {
  const m: TemplateMessage[] = [{ role: 'system', content: 'You are helpful.' }];
  for (let i = 0; m.length < n; i++) {
    m.push({ role: 'user', content: `question number ${i} about something` });
    if (i % 2 === 0) {
      m.push({
        role: 'assistant',
        content: '',
        thinking: `hmm ${i}`,
        toolCalls: [{ function: { index: 0, name: 'tool_1', arguments: { a: `x${i}`, b: 2 } } }],
      });
      m.push({ role: 'tool', content: `result ${i}`, toolName: 'tool_1' });
    }
    m.push({ role: 'assistant', content: `answer number ${i} is here`, thinking: `think ${i}` });
  }
  return m;
}

describe('template execution budget: legitimate templates are not affected', () => {
  const templates: [string, string][] = [
    ...readdirSync(TEMPLATE_ASSETS_DIR)
      .filter((f) => f.endsWith('.gotmpl'))
      .map((f): [string, string] => [f, readFileSync(join(TEMPLATE_ASSETS_DIR, f), 'utf8')]),
    ...Object.entries(TOOL_TEMPLATES as Record<string, unknown>).filter(
      (e): e is [string, string] => typeof e[1] === 'string',
    ),
  ];

  it('has the library and the tool templates', () => assert.ok(templates.length >= 28));

  for (const [name, src] of templates) {
    it(`${name}: 3,000 messages with 30 tools render exactly as without a budget`, () => {
      const t = GoTemplate.parse(src);
      const input = { messages: conversation(3000), tools: Array.from({ length: 30 }, (_, i) => tool(i)), think: true };
      const copy = (): typeof input => ({ ...input, messages: input.messages.map((m) => ({ ...m })) });
      const unlimited = renderPrompt(t, copy(), new TemplateBudget({ steps: 1e15, output: 1e15 }));
      const budget = new TemplateBudget(renderLimits(copy()));
      assert.equal(renderPrompt(t, copy(), budget), unlimited);
      // Headroom: a legitimate render uses well under half of either limit.
      assert.ok(budget.used.steps < budget.limits.steps / 2, `steps ${budget.used.steps} of ${budget.limits.steps}`);
      assert.ok(budget.used.output < budget.limits.output / 2, `output ${budget.used.output}`);
    });
  }
});
