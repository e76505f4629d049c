import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { FunctionTool, ResponseFunctionToolCall } from 'openai/resources/responses/responses';
import { ensureTestModels, QWEN_TOOLS_GO_TEMPLATE, TINY_QWEN2_TOOLS } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

// Forced tool calls (`tool_choice` "required" / a named function / Anthropic `any` / `tool`) on the REAL addon with
// tiny-qwen2-tools, whose random weights never head for a call by themselves: every call here exists only because the
// grammar forced it, and its arguments must follow the tool's JSON Schema. Both prompt modes of reference §8.1: native
// (the GGUF's Jinja template through llama.cpp common/chat) and rendered (a Modelfile TEMPLATE, Go template, whose
// `{{ if .ToolCalls }}` block gives the call syntax). Beyond Ollama, which ignores tool_choice (§8.5).

/** Bounded schemas: a random model writes a string until the grammar makes it stop. */
const WEATHER_SCHEMA = {
  type: 'object' as const,
  properties: {
    city: { type: 'string', maxLength: 12 },
    days: { type: 'integer', minimum: 1, maximum: 7 },
  },
  required: ['city', 'days'],
};
const TIME_SCHEMA = {
  type: 'object' as const,
  properties: { zone: { type: 'string', enum: ['UTC', 'CET', 'JST'] } },
  required: ['zone'],
};

const MAX_TOKENS = 256;
const QUESTION = 'What will the weather be in Paris for the next 3 days?';

/** Asserts get_weather arguments (JSON text or object) follow WEATHER_SCHEMA; returns them. */
function assertWeatherArgs(args: string | unknown): Record<string, unknown> {
  const value = (typeof args === 'string' ? JSON.parse(args) : args) as Record<string, unknown>;
  assert.deepEqual(Object.keys(value).sort(), ['city', 'days'], JSON.stringify(value));
  assert.equal(typeof value.city, 'string');
  assert.ok([...(value.city as string)].length <= 12, JSON.stringify(value));
  assert.ok(Number.isInteger(value.days) && (value.days as number) >= 1 && (value.days as number) <= 7);
  return value;
}

/** Asserts get_time arguments follow TIME_SCHEMA. */
function assertTimeArgs(args: string | unknown): void {
  const value = (typeof args === 'string' ? JSON.parse(args) : args) as Record<string, unknown>;
  assert.deepEqual(Object.keys(value), ['zone'], JSON.stringify(value));
  assert.ok(['UTC', 'CET', 'JST'].includes(value.zone as string), JSON.stringify(value));
}

const openaiTools: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather forecast', parameters: WEATHER_SCHEMA } },
  { type: 'function', function: { name: 'get_time', description: 'Current time', parameters: TIME_SCHEMA } },
];
const anthropicTools: Anthropic.Tool[] = [
  { name: 'get_weather', description: 'Weather forecast', input_schema: WEATHER_SCHEMA },
  { name: 'get_time', description: 'Current time', input_schema: TIME_SCHEMA },
];
const responsesTools: FunctionTool[] = [
  { type: 'function', name: 'get_weather', description: 'Weather forecast', parameters: WEATHER_SCHEMA, strict: false },
  { type: 'function', name: 'get_time', description: 'Current time', parameters: TIME_SCHEMA, strict: false },
];

describe('forced tool calls (tool_choice) with the real addon', { skip: addon.skip }, () => {
  let t: TestApp;
  let openai: OpenAI;
  let anthropic: Anthropic;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 1024 } });
    openai = new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: 'x', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: t.baseUrl, apiKey: 'x', maxRetries: 0 });
    // Greedy by default (the Anthropic SDK has no temperature): the same output on every run.
    const params = 'PARAMETER temperature 0\nPARAMETER seed 42';
    for (const [model, modelfile] of [
      ['native', `FROM ${TINY_QWEN2_TOOLS}\n${params}`],
      ['rendered', `FROM ${TINY_QWEN2_TOOLS}\n${params}\nTEMPLATE """${QWEN_TOOLS_GO_TEMPLATE}"""`],
    ]) {
      const res = await postJson(`${t.baseUrl}/api/create`, { model, modelfile, stream: false });
      assert.equal(res.status, 200, await res.text());
    }
  });

  after(() => t?.close());

  it('both models are tools-capable; only "rendered" has a Go template', async () => {
    for (const model of ['native', 'rendered']) {
      const res = await postJson(`${t.baseUrl}/api/show`, { model });
      const body = (await res.json()) as { capabilities: string[]; template?: string };
      assert.ok(body.capabilities.includes('tools'), `${model}: ${JSON.stringify(body.capabilities)}`);
      if (model === 'rendered') assert.ok(body.template?.includes('{{- if .ToolCalls }}'));
    }
  });

  for (const model of ['native', 'rendered']) {
    describe(`${model} mode`, () => {
      describe('OpenAI /v1/chat/completions', () => {
        it('tool_choice "required": one call, finish_reason tool_calls, arguments follow the schema', async () => {
          const res = await openai.chat.completions.create({
            model,
            messages: [{ role: 'user', content: QUESTION }],
            tools: openaiTools.slice(0, 1),
            tool_choice: 'required',
            temperature: 0,
            seed: 42,
            max_tokens: MAX_TOKENS,
          });
          const choice = res.choices[0];
          assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
          assert.ok(!choice.message.content, 'no text besides the call');
          const calls = choice.message.tool_calls ?? [];
          assert.equal(calls.length, 1);
          assert.equal(calls[0].type, 'function');
          assert.match(calls[0].id, /^call_/);
          const call = calls[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
          assert.equal(call.function.name, 'get_weather');
          assertWeatherArgs(call.function.arguments);
          assert.ok(res.usage!.completion_tokens < MAX_TOKENS);
        });

        it('streamed, a named function: tool_calls deltas add up to that call', async () => {
          const stream = await openai.chat.completions.create({
            model,
            messages: [{ role: 'user', content: QUESTION }],
            tools: openaiTools,
            tool_choice: { type: 'function', function: { name: 'get_time' } },
            temperature: 0,
            seed: 42,
            max_tokens: MAX_TOKENS,
            stream: true,
          });
          let name = '';
          let args = '';
          let id = '';
          let finish: string | null = null;
          let content = '';
          for await (const chunk of stream) {
            const c = chunk.choices[0];
            if (!c) continue;
            content += c.delta.content ?? '';
            for (const d of c.delta.tool_calls ?? []) {
              assert.equal(d.index, 0);
              id ||= d.id ?? '';
              name += d.function?.name ?? '';
              args += d.function?.arguments ?? '';
            }
            finish = c.finish_reason ?? finish;
          }
          assert.equal(finish, 'tool_calls');
          assert.equal(content, '');
          assert.match(id, /^call_/);
          assert.equal(name, 'get_time');
          assertTimeArgs(args);
        });
      });

      describe('Anthropic /v1/messages', () => {
        it('tool_choice {type:"any"}: stop_reason tool_use and one tool_use block', async () => {
          const msg = await anthropic.messages.create({
            model,
            max_tokens: MAX_TOKENS,
            messages: [{ role: 'user', content: QUESTION }],
            tools: anthropicTools.slice(0, 1),
            tool_choice: { type: 'any', disable_parallel_tool_use: true },
          });
          assert.equal(msg.stop_reason, 'tool_use', JSON.stringify(msg));
          assert.deepEqual(
            msg.content.map((b) => b.type),
            ['tool_use'],
          );
          const block = msg.content[0] as Anthropic.ToolUseBlock;
          assert.equal(block.name, 'get_weather');
          assert.match(block.id, /^toolu_|^call_/);
          assertWeatherArgs(block.input);
        });

        it('streamed, tool_choice {type:"tool", name}: input_json_delta events build the input', async () => {
          const stream = anthropic.messages.stream({
            model,
            max_tokens: MAX_TOKENS,
            messages: [{ role: 'user', content: QUESTION }],
            tools: anthropicTools,
            tool_choice: { type: 'tool', name: 'get_time' },
          });
          let partial = '';
          let started: Anthropic.ContentBlock | undefined;
          stream.on('streamEvent', (e) => {
            if (e.type === 'content_block_start') started = e.content_block;
            if (e.type === 'content_block_delta' && e.delta.type === 'input_json_delta') {
              partial += e.delta.partial_json;
            }
          });
          const final = await stream.finalMessage();
          assert.equal(final.stop_reason, 'tool_use');
          assert.equal(started?.type, 'tool_use');
          assert.equal((started as Anthropic.ToolUseBlock).name, 'get_time');
          assert.deepEqual(
            final.content.map((b) => b.type),
            ['tool_use'],
          );
          const block = final.content[0] as Anthropic.ToolUseBlock;
          assertTimeArgs(partial);
          assert.deepEqual(block.input, JSON.parse(partial));
        });
      });

      describe('OpenAI /v1/responses', () => {
        it('tool_choice "required": one function_call output item', async () => {
          const res = await openai.responses.create({
            model,
            input: QUESTION,
            tools: responsesTools.slice(0, 1),
            tool_choice: 'required',
            temperature: 0,
            max_output_tokens: MAX_TOKENS,
            store: false,
          });
          assert.equal(res.status, 'completed', JSON.stringify(res));
          assert.deepEqual(
            res.output.map((o) => o.type),
            ['function_call'],
          );
          const call = res.output[0] as ResponseFunctionToolCall;
          assert.equal(call.name, 'get_weather');
          assert.equal(call.status, 'completed');
          assertWeatherArgs(call.arguments);
        });

        it('streamed, a named function: function_call_arguments delta/done events', async () => {
          const stream = openai.responses.stream({
            model,
            input: QUESTION,
            tools: responsesTools,
            tool_choice: { type: 'function', name: 'get_time' },
            temperature: 0,
            max_output_tokens: MAX_TOKENS,
            store: false,
          });
          let deltas = '';
          let done = '';
          const types: string[] = [];
          for await (const e of stream) {
            types.push(e.type);
            if (e.type === 'response.function_call_arguments.delta') deltas += e.delta;
            if (e.type === 'response.function_call_arguments.done') done = e.arguments;
          }
          const final = await stream.finalResponse();
          assert.equal(types.at(-1), 'response.completed');
          assert.equal(done, deltas);
          assertTimeArgs(done);
          assert.deepEqual(
            final.output.map((o) => o.type),
            ['function_call'],
          );
          const call = final.output[0] as ResponseFunctionToolCall;
          assert.equal(call.name, 'get_time');
          assert.equal(call.arguments, done);
        });
      });

      it('tool_choice "none" hides the tools: the prompt is the one without tools', async () => {
        const promptTokens = async (extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>) => {
          const res = await openai.chat.completions.create({
            model,
            messages: [{ role: 'user', content: QUESTION }],
            temperature: 0,
            max_tokens: 1,
            ...extra,
          });
          return res.usage!.prompt_tokens;
        };
        const without = await promptTokens({});
        const none = await promptTokens({ tools: openaiTools, tool_choice: 'none' });
        const auto = await promptTokens({ tools: openaiTools, tool_choice: 'auto' });
        assert.equal(none, without);
        assert.ok(auto > without + 20, `the tool list is in the prompt with "auto" (${auto} vs ${without})`);

        const count = async (extra: Partial<Anthropic.MessageCountTokensParams>) =>
          (
            await anthropic.messages.countTokens({
              model,
              messages: [{ role: 'user', content: QUESTION }],
              ...extra,
            })
          ).input_tokens;
        assert.equal(await count({ tools: anthropicTools, tool_choice: { type: 'none' } }), await count({}));
      });
    });
  }
});
