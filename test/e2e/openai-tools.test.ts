import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { createTestApp, TestApp } from '../utils/test-app';

const weather: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: { type: 'object', required: ['city'], properties: { city: { type: 'string' } } },
  },
};

const TOOL_CALL = ['<tool_call>{"name":"get_weather",', '"arguments":{"city":"Tokyo"}}', '</tool_call>'];

// The OpenAI /v1/chat/completions tool-call round trip through the official `openai` client over a scripted
// FakeBinding (native mode: the fake Jinja template's renderChat + parser).
describe('OpenAI /v1 tool calls (FakeBinding, openai client)', () => {
  let t: TestApp;
  let client: OpenAI;
  const binding = new FakeBinding();

  before(async () => {
    t = await createTestApp({ binding });
    client = new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: 'x', maxRetries: 0 });
    const path = join(t.modelsDir, 'tooly.gguf');
    await writeTinyGguf(path, { chatTemplate: '{% for tool in tools %}{{ tool }}{% endfor %}{{ chatml }}' });
    const res = await fetch(`${t.baseUrl}/api/create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tooly', modelfile: `FROM ${path}`, stream: false }),
    });
    assert.equal(res.status, 200);
  });

  beforeEach(() => {
    binding.renderRequests.length = 0;
    binding.script = () => ({ pieces: TOOL_CALL });
  });

  after(() => t.close());

  it('non-stream: message.tool_calls with a JSON-string arguments and finish_reason tool_calls', async () => {
    const res = await client.chat.completions.create({
      model: 'tooly',
      messages: [{ role: 'user', content: 'Weather in Tokyo?' }],
      tools: [weather],
    });
    const choice = res.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.role, 'assistant');
    assert.ok(!choice.message.content, 'no tool-call text as content');
    assert.equal(choice.message.tool_calls?.length, 1);
    const call = choice.message.tool_calls![0];
    assert.equal(typeof call.id, 'string');
    assert.ok(call.id.length > 0);
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.equal(typeof call.function.arguments, 'string');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Tokyo' });
    assert.deepEqual(
      binding.renderRequests.at(-1)!.tools?.map((x) => x.name),
      ['get_weather'],
    );
  });

  it('stream: tool_calls deltas with index, finish_reason tool_calls on the last choice chunk', async () => {
    const stream = await client.chat.completions.create({
      model: 'tooly',
      messages: [{ role: 'user', content: 'Weather in Tokyo?' }],
      tools: [weather],
      stream: true,
    });
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    const withChoices = chunks.filter((c) => c.choices.length > 0);
    const last = withChoices.at(-1)!;
    assert.equal(last.choices[0].finish_reason, 'tool_calls');
    for (const c of withChoices.slice(0, -1)) assert.equal(c.choices[0].finish_reason, null);
    const deltas = withChoices.flatMap((c) => c.choices[0].delta.tool_calls ?? []);
    assert.equal(deltas.length, 1);
    assert.equal(deltas[0].index, 0);
    assert.equal(deltas[0].type, 'function');
    assert.ok(deltas[0].id);
    assert.equal(deltas[0].function?.name, 'get_weather');
    assert.deepEqual(JSON.parse(deltas[0].function?.arguments ?? ''), { city: 'Tokyo' });
    const text = withChoices.map((c) => c.choices[0].delta.content ?? '').join('');
    assert.equal(text, '', 'no tool-call text as content');
  });

  it('stream: two calls get indices 0 and 1, text before them stays content, usage chunk last', async () => {
    binding.script = () => ({
      pieces: ['Checking. ', ...TOOL_CALL, '<tool_call>{"name":"get_weather","arguments":{"city":"Oslo"}}</tool_call>'],
    });
    const stream = await client.chat.completions.create({
      model: 'tooly',
      messages: [{ role: 'user', content: 'Weather in Tokyo and Oslo?' }],
      tools: [weather],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    assert.deepEqual(chunks.at(-1)!.choices, []);
    assert.ok(chunks.at(-1)!.usage);
    const withChoices = chunks.filter((c) => c.choices.length > 0);
    assert.equal(withChoices.at(-1)!.choices[0].finish_reason, 'tool_calls');
    const deltas = withChoices.flatMap((c) => c.choices[0].delta.tool_calls ?? []);
    assert.deepEqual(
      deltas.map((d) => [d.index, JSON.parse(d.function?.arguments ?? '') as unknown]),
      [
        [0, { city: 'Tokyo' }],
        [1, { city: 'Oslo' }],
      ],
    );
    assert.equal(new Set(deltas.map((d) => d.id)).size, 2, 'distinct ids');
    assert.equal(withChoices.map((c) => c.choices[0].delta.content ?? '').join(''), 'Checking. ');
  });

  it("the .stream() helper's finalChatCompletion() has the tool call", async () => {
    const runner = client.chat.completions.stream({
      model: 'tooly',
      messages: [{ role: 'user', content: 'Weather in Tokyo?' }],
      tools: [weather],
    });
    const final = await runner.finalChatCompletion();
    const choice = final.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.tool_calls?.length, 1);
    const call = choice.message.tool_calls![0];
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Tokyo' });
  });

  it('a follow-up with the assistant tool_calls and a role:tool message reaches the prompt', async () => {
    const first = await client.chat.completions.create({
      model: 'tooly',
      messages: [{ role: 'user', content: 'Weather in Tokyo?' }],
      tools: [weather],
    });
    const assistant = first.choices[0].message;
    const callId = assistant.tool_calls![0].id;
    binding.script = () => ({ pieces: ['It is ', 'sunny.'] });
    const messages: ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Weather in Tokyo?' },
      { role: 'assistant', content: assistant.content, tool_calls: assistant.tool_calls },
      { role: 'tool', tool_call_id: callId, content: '{"temp":21}' },
    ];
    const { data: second, response } = await client.chat.completions
      .create({ model: 'tooly', messages, tools: [weather] })
      .withResponse();
    assert.equal(response.status, 200);
    assert.equal(second.choices[0].message.content, 'It is sunny.');
    assert.equal(second.choices[0].finish_reason, 'stop');
    assert.equal(second.choices[0].message.tool_calls, undefined);
    const rendered = binding.renderRequests.at(-1)!;
    assert.equal(rendered.messages[1].role, 'assistant');
    assert.equal(rendered.messages[1].toolCalls?.[0].name, 'get_weather');
    assert.deepEqual(JSON.parse(rendered.messages[1].toolCalls![0].arguments), { city: 'Tokyo' });
    assert.equal(rendered.messages[2].role, 'tool');
    assert.equal(rendered.messages[2].content, '{"temp":21}');
    assert.equal(rendered.messages[2].toolName, 'get_weather', 'tool name looked up by tool_call_id');
    const prompt = binding.submitted.at(-1)!;
    const text = String.fromCharCode(...Array.from(prompt.tokens).filter((x) => x >= 32 || x === 10));
    assert.match(text, /<\|im_start\|>tool get_weather\n\{"temp":21\}<\|im_end\|>/);
  });

  it("tool_choice 'none' drops the tools (the model sees none and cannot call)", async () => {
    binding.script = () => ({ pieces: ['No tools.'] });
    const res = await client.chat.completions.create({
      model: 'tooly',
      messages: [{ role: 'user', content: 'Weather in Tokyo?' }],
      tools: [weather],
      tool_choice: 'none',
    });
    assert.equal(res.choices[0].finish_reason, 'stop');
    assert.equal(res.choices[0].message.content, 'No tools.');
    const rendered = binding.renderRequests.at(-1)!;
    assert.ok(!rendered.tools || rendered.tools.length === 0);
  });

  it("tool_choice 'required' and a named function reach the chat render as a required tool call", async () => {
    binding.script = () => ({ pieces: ['<tool_call>{"name":"get_weather","arguments":{"city":"Oslo"}}</tool_call>'] });
    const other = { type: 'function' as const, function: { name: 'get_time', parameters: { type: 'object' } } };
    await client.chat.completions.create({
      model: 'tooly',
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [weather, other],
      tool_choice: 'required',
    });
    let rendered = binding.renderRequests.at(-1)!;
    assert.equal(rendered.toolChoice, 'required');
    assert.deepEqual(
      rendered.tools?.map((t) => t.name),
      ['get_weather', 'get_time'],
    );
    await client.chat.completions.create({
      model: 'tooly',
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [weather, other],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    rendered = binding.renderRequests.at(-1)!;
    assert.equal(rendered.toolChoice, 'required');
    assert.deepEqual(
      rendered.tools?.map((t) => t.name),
      ['get_weather'],
    );
    await assert.rejects(
      client.chat.completions.create({
        model: 'tooly',
        messages: [{ role: 'user', content: 'x' }],
        tools: [weather],
        tool_choice: { type: 'function', function: { name: 'nope' } },
      }),
      (err: unknown) => err instanceof OpenAI.BadRequestError,
    );
  });
});
