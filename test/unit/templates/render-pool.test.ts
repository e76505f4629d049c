import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { RequestCancelledError } from '../../../src/common/errors';
import {
  GoTemplate,
  INLINE_MAX_INPUT_CHARS,
  INLINE_MAX_MESSAGES,
  RenderInput,
  TemplateBudgetError,
  TemplateError,
  TemplateMessage,
  TemplateTool,
  closeRenderPool,
  isLargeRenderInput,
  renderInWorker,
  renderInputSize,
  renderLimits,
  renderPrompt,
  renderPromptAsync,
} from '../../../src/templates';
import { TEMPLATE_ASSETS_DIR } from '../../../src/templates/template-library';

/** The bundled templates whose golden renderings test/fixtures/ollama-templates holds (golden.test.ts). */
const TEMPLATES = readdirSync(TEMPLATE_ASSETS_DIR)
  .filter((f) => f.endsWith('.gotmpl'))
  .sort();

const USER: TemplateMessage = { role: 'user', content: 'Hello, how are you?' };
const ASSISTANT: TemplateMessage = { role: 'assistant', content: "I'm doing great. How can I help you today?" };
const SYSTEM: TemplateMessage = { role: 'system', content: 'You are a helpful assistant.' };

/** A tool template in Ollama's style (tools, tool calls, tool answers, thinking, `json`, `toTypeScriptType`). */
const TOOL_TEMPLATE = `{{- if .System }}<|system|>{{ .System }}{{ end }}
{{- if .Tools }}<tools>{{ range .Tools }}{{ json . }} {{ .Function.Name }}({{ range $k, $v := .Function.Parameters.Properties }}{{ $k }}: {{ toTypeScriptType $v }}, {{ end }}){{ end }}</tools>{{ end }}
{{- range $i, $m := .Messages }}<|{{ .Role }}|>
{{- if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}{{ .Content }}
{{- range .ToolCalls }}<tool_call>{{ .Function.Name }} {{ .Function.Arguments }} {{ json .Function.Arguments }}</tool_call>{{ end }}
{{- if eq .Role "tool" }} ({{ .ToolName }} {{ .ToolCallID }}){{ end }}{{ .Images }} {{ len (slice $.Messages $i) }}
{{- end }}<|assistant|>{{ if .Think }}<think>{{ .ThinkLevel }}{{ .IsThinkSet }}{{ end }}`;

const TOOL: TemplateTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather',
    parameters: {
      type: 'object',
      required: ['city'],
      properties: {
        city: { type: 'string', description: 'The city' },
        unit: { type: ['string', 'null'], enum: ['celsius', 'fahrenheit'] },
        days: { type: 'integer' },
      },
    },
  },
};

/** Arguments parsed from JSON, with a `__proto__` key (an own property, as JSON.parse makes it). */
const ARGS = JSON.parse(
  '{"city":"Paris","__proto__":{"x":1},"n":1.5,"list":[1,"a",null,true],"o":{"k":"v"}}',
) as Record<string, unknown>;

const TOOL_CHAT: RenderInput = {
  messages: [
    SYSTEM,
    { role: 'user', content: 'What is the weather in [img] Paris?', images: ['aGVsbG8=', 'd29ybGQ='] },
    {
      role: 'assistant',
      content: '',
      thinking: 'call the tool',
      toolCalls: [{ id: 'call_1', function: { index: 0, name: 'get_weather', arguments: ARGS } }],
    },
    { role: 'tool', content: '{"t":21}', toolName: 'get_weather', toolCallId: 'call_1' },
    { role: 'user', content: 'Thanks' },
  ],
  tools: [TOOL],
  think: true,
  thinkLevel: 'high',
  isThinkSet: true,
};

/** A chat of `n` messages (alternating user/assistant, ending with a user message). */
function chat(n: number, content = (i: number) => `message ${i}`): TemplateMessage[] {
  return Array.from({ length: n }, (_, i) => ({
    role: i % 2 === 0 || i === n - 1 ? 'user' : 'assistant',
    content: content(i),
  }));
}

/** Within the budget of its input (500 per message) but heavy: ~400 steps per message, nothing printed. */
const HEAVY = GoTemplate.parse('{{ range .Messages }}{{ range 200 }}{{ end }}{{ end }}{{ len .Messages }}');

/** The error a render throws (or undefined). */
async function failure(render: () => Promise<string> | string): Promise<unknown> {
  try {
    await render();
    return undefined;
  } catch (err) {
    return err;
  }
}

/** A bounded wait for a hang (not a speed assertion). */
function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, guard]).finally(() => clearTimeout(timer));
}

describe('Go-template renders off the event loop (render-pool)', () => {
  after(() => closeRenderPool());

  it('a worker renders the golden templates exactly as the inline path does', async () => {
    const conversations = [[USER], [USER, ASSISTANT, USER], [SYSTEM, USER, ASSISTANT, USER]];
    for (const file of TEMPLATES) {
      const template = GoTemplate.parse(readFileSync(join(TEMPLATE_ASSETS_DIR, file), 'utf8'));
      for (const messages of conversations) {
        const input: RenderInput = { messages: messages.map((m) => ({ ...m })) };
        const inline = renderPrompt(template, input);
        assert.equal(await renderInWorker(template, input, renderLimits(input)), inline, file);
        assert.equal(await renderPromptAsync(template, input), inline, file);
      }
      const fim: RenderInput = { messages: [], prompt: 'def add(a, b):', suffix: 'print(add(1, 2))' };
      assert.equal(await renderInWorker(template, fim, renderLimits(fim)), renderPrompt(template, fim), file);
    }
  });

  it('tools, tool calls (a `__proto__` argument), images, thinking and a large chat cross the thread boundary intact', async () => {
    const template = GoTemplate.parse(TOOL_TEMPLATE);
    const inline = renderPrompt(template, TOOL_CHAT);
    assert.match(inline, /__proto__/);
    assert.equal(await renderInWorker(template, TOOL_CHAT, renderLimits(TOOL_CHAT)), inline);
    const big: RenderInput = { ...TOOL_CHAT, messages: [...TOOL_CHAT.messages, ...chat(2 * INLINE_MAX_MESSAGES)] };
    assert.ok(isLargeRenderInput(renderInputSize(big)), 'a large input goes to a worker at once');
    assert.equal(await renderPromptAsync(template, big), renderPrompt(template, big));
    const long: RenderInput = { messages: [{ role: 'user', content: 'y'.repeat(INLINE_MAX_INPUT_CHARS + 1) }] };
    assert.ok(isLargeRenderInput(renderInputSize(long)));
    assert.ok(!isLargeRenderInput(renderInputSize(TOOL_CHAT)), 'a small input is tried inline first');
  });

  it('the budget error from a worker is the inline one (same class, limits and message); other errors too', async () => {
    const cases: [string, RenderInput, string][] = [
      // steps, small input: past the inline budget, then the worker's full budget
      ['{{ range 100000000000 }}{{ end }}', { messages: [USER] }, 'steps'],
      ['{{ range 100000000000 }}{{ end }}', { messages: chat(300) }, 'steps'], // large input: a worker at once
      [
        '{{ .Messages }}{{ range 40 }}{{ $.Messages }}{{ end }}',
        { messages: [{ role: 'user', content: 'z'.repeat(60_000) }] },
        'output',
      ],
      ['{{ .Messages }}{{ range 100000 }}{{ $.Messages }}{{ end }}', { messages: [USER] }, 'output'],
      ['{{ index .Messages 40 }}', { messages: [USER] }, 'error'], // a template error, not a budget
    ];
    for (const [source, input, kind] of cases) {
      const template = GoTemplate.parse(source);
      const inline = await failure(() => renderPrompt(template, input));
      assert.ok(inline instanceof TemplateError, source);
      assert.equal(inline instanceof TemplateBudgetError ? inline.resource : 'error', kind, inline.message);
      for (const render of [
        () => renderPromptAsync(template, input),
        () => renderInWorker(template, input, renderLimits(input)),
      ]) {
        const err = await failure(render);
        assert.ok(err instanceof TemplateError, `${source}: ${String(err)}`);
        assert.equal(err.constructor, inline.constructor, source);
        assert.equal(err.message, inline.message, source);
        if (inline instanceof TemplateBudgetError) {
          assert.deepEqual(
            [(err as TemplateBudgetError).resource, (err as TemplateBudgetError).limit],
            [inline.resource, inline.limit],
          );
        }
      }
    }
  });

  it('a heavy render does not hold the event loop: a 5 ms ticker keeps ticking (no gap over 50 ms)', async () => {
    const input: RenderInput = { messages: chat(2000) };
    let last = performance.now();
    let maxGap = 0;
    let ticks = 0;
    const ticker = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
      ticks++;
    }, 5);
    let text: string;
    try {
      text = await within(60_000, renderPromptAsync(HEAVY, input));
    } finally {
      clearInterval(ticker);
    }
    assert.ok(ticks > 0);
    assert.ok(maxGap < 50, `the event loop stalled for ${maxGap.toFixed(1)} ms during the render (${ticks} ticks)`);
    assert.equal(text, renderPrompt(HEAVY, input), 'and it renders what the inline path renders');
  });

  it('abort stops a running heavy render (RequestCancelledError), and the pool renders on afterwards', async () => {
    // 40,000 messages × 400 steps: seconds of work in a worker, within its budget.
    const input: RenderInput = { messages: chat(40_000, () => 'x') };
    const controller = new AbortController();
    const running = renderPromptAsync(HEAVY, input, controller.signal);
    setTimeout(() => controller.abort(), 200);
    const err = await within(
      30_000,
      failure(() => running),
    );
    assert.ok(err instanceof RequestCancelledError, String(err));
    // Its thread was terminated (piscina ends a worker whose task is aborted) and the pool goes on with a new one.
    const small: RenderInput = { messages: chat(300) };
    assert.equal(await within(30_000, renderPromptAsync(HEAVY, small)), renderPrompt(HEAVY, small));
    const already = new AbortController();
    already.abort();
    assert.ok((await failure(() => renderPromptAsync(HEAVY, input, already.signal))) instanceof RequestCancelledError);
  });
});
