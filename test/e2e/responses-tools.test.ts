import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { FunctionTool, ResponseFunctionToolCall, ResponseInputItem } from 'openai/resources/responses/responses';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

const weather: FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: { type: 'object', required: ['city'], properties: { city: { type: 'string' } } },
  strict: true,
};

const TOOL_CALL = ['<tool_call>{"name":"get_weather",', '"arguments":{"city":"Tokyo"}}', '</tool_call>'];

function lastPrompt(binding: FakeBinding): string {
  const tokens = binding.submitted.at(-1)!.tokens;
  return String.fromCharCode(...Array.from(tokens).filter((x) => x >= 32 || x === 10));
}

// Function calling and thinking over /v1/responses through the official `openai` client and a scripted FakeBinding
// (native mode: the fake Jinja template's renderChat + parser), reference/ollama-api.md §12.6.
describe('OpenAI /v1/responses tools and reasoning (FakeBinding, openai client)', () => {
  let t: TestApp;
  let client: OpenAI;
  const binding = new FakeBinding();

  before(async () => {
    t = await createTestApp({ binding });
    client = new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: 'x', maxRetries: 0 });
    for (const [model, template] of [
      ['tooly', '{% for tool in tools %}{{ tool }}{% endfor %}{{ chatml }}'],
      ['thinker', '{{ chatml }}<think></think>'],
    ]) {
      const path = join(t.modelsDir, `${model}.gguf`);
      await writeTinyGguf(path, { chatTemplate: template });
      const res = await postJson(`${t.baseUrl}/api/create`, { model, modelfile: `FROM ${path}`, stream: false });
      assert.equal(res.status, 200);
    }
  });

  beforeEach(() => {
    binding.chat.thinking = false;
    binding.renderRequests.length = 0;
    binding.script = () => ({ pieces: TOOL_CALL });
  });

  after(() => t.close());

  it('a function_call item, then a function_call_output round trip reaches the prompt', async () => {
    const first = await client.responses.create({ model: 'tooly', input: 'Weather in Tokyo?', tools: [weather] });
    assert.equal(first.status, 'completed');
    assert.equal(first.output_text, '');
    assert.equal(first.output.length, 1);
    const call = first.output[0] as ResponseFunctionToolCall;
    assert.equal(call.type, 'function_call');
    assert.match(call.id ?? '', /^fc_/);
    assert.match(call.call_id, /^call_[0-9a-f]{24}$/);
    assert.equal(call.name, 'get_weather');
    assert.equal(call.status, 'completed');
    assert.deepEqual(JSON.parse(call.arguments), { city: 'Tokyo' });
    assert.deepEqual(first.tools, [weather]);
    assert.equal(first.tool_choice, 'auto');
    assert.deepEqual(
      binding.renderRequests.at(-1)!.tools?.map((x) => x.name),
      ['get_weather'],
    );

    binding.script = () => ({ pieces: ['It is ', 'sunny.'] });
    const input: ResponseInputItem[] = [
      { role: 'user', content: 'Weather in Tokyo?' },
      call,
      { type: 'function_call_output', call_id: call.call_id, output: '{"temp":21}' },
    ];
    const second = await client.responses.create({ model: 'tooly', input, tools: [weather], store: false });
    assert.equal(second.output_text, 'It is sunny.');
    const rendered = binding.renderRequests.at(-1)!;
    assert.equal(rendered.messages[1].role, 'assistant');
    assert.equal(rendered.messages[1].toolCalls?.[0].name, 'get_weather');
    assert.equal(rendered.messages[1].toolCalls?.[0].id, call.call_id);
    assert.equal(rendered.messages[2].role, 'tool');
    assert.equal(rendered.messages[2].toolName, 'get_weather');
    assert.equal(rendered.messages[2].toolCallId, call.call_id);
    assert.match(lastPrompt(binding), /<\|im_start\|>tool get_weather\n\{"temp":21\}<\|im_end\|>/);
  });

  it('previous_response_id + a function_call_output only: the stored call names the tool', async () => {
    const first = await client.responses.create({ model: 'tooly', input: 'Weather in Tokyo?', tools: [weather] });
    const call = first.output[0] as ResponseFunctionToolCall;
    binding.script = () => ({ pieces: ['Sunny.'] });
    const second = await client.responses.create({
      model: 'tooly',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"temp":21}' }],
      tools: [weather],
    });
    assert.equal(second.output_text, 'Sunny.');
    const turns =
      '<|im_start|>user\nWeather in Tokyo?<|im_end|>\n' +
      '<|im_start|>assistant\n<tool_call>{"name":"get_weather","arguments":{"city":"Tokyo"}}</tool_call><|im_end|>\n' +
      '<|im_start|>tool get_weather\n{"temp":21}<|im_end|>\n';
    assert.ok(lastPrompt(binding).includes(turns), lastPrompt(binding));
  });

  it('responses.stream() with a tool call: function_call_arguments events, finalResponse() has the call', async () => {
    binding.script = () => ({ pieces: ['Checking. ', ...TOOL_CALL] });
    const stream = client.responses.stream({ model: 'tooly', input: 'Weather?', tools: [weather] });
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    const final = await stream.finalResponse();
    assert.deepEqual(
      final.output.map((o) => o.type),
      ['message', 'function_call'],
    );
    assert.equal(final.output_text, 'Checking. ');
    const fc = final.output[1] as ResponseFunctionToolCall & { parsed_arguments?: unknown };
    assert.deepEqual(fc.parsed_arguments, { city: 'Tokyo' }, 'strict tool arguments parsed by the SDK');
    assert.ok(types.includes('response.function_call_arguments.delta'));
    assert.ok(types.includes('response.function_call_arguments.done'));
    assert.equal(types.at(-1), 'response.completed');
  });

  it("tool_choice: 'none' drops the tools, a named function forces that tool, an unknown name is 400", async () => {
    binding.script = () => ({ pieces: ['No tools.'] });
    const time: FunctionTool = { type: 'function', name: 'get_time', parameters: { type: 'object' }, strict: false };
    const none = await client.responses.create({ model: 'tooly', input: 'x', tools: [weather], tool_choice: 'none' });
    assert.equal(none.output_text, 'No tools.');
    assert.ok(!binding.renderRequests.at(-1)!.tools?.length);
    await client.responses.create({
      model: 'tooly',
      input: 'x',
      tools: [weather, time],
      tool_choice: { type: 'function', name: 'get_time' },
    });
    assert.equal(binding.renderRequests.at(-1)!.toolChoice, 'required');
    assert.deepEqual(
      binding.renderRequests.at(-1)!.tools?.map((x) => x.name),
      ['get_time'],
    );
    await assert.rejects(
      client.responses.create({
        model: 'tooly',
        input: 'x',
        tools: [weather],
        tool_choice: { type: 'function', name: 'nope' },
      }),
      OpenAI.BadRequestError,
    );
  });

  it('thinking: a reasoning item with reasoning_text content, streamed as reasoning_text events', async () => {
    binding.chat.thinking = true;
    binding.script = () => ({ pieces: ['hm', 'm', '</think>', 'Yes'] });
    const res = await client.responses.create({ model: 'thinker', input: 'Sure?', reasoning: { effort: 'high' } });
    assert.equal(binding.renderRequests.at(-1)!.enableThinking, true);
    assert.deepEqual(
      res.output.map((o) => o.type),
      ['reasoning', 'message'],
    );
    const reasoning = res.output[0];
    assert.equal(reasoning.type === 'reasoning' && reasoning.content?.[0].text, 'hmm');
    assert.deepEqual(reasoning.type === 'reasoning' && reasoning.summary, []);
    assert.equal(res.output_text, 'Yes');
    assert.equal(res.usage?.output_tokens_details.reasoning_tokens, 2);

    const stream = client.responses.stream({ model: 'thinker', input: 'Sure?' });
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    assert.ok(types.includes('response.reasoning_text.delta'));
    assert.ok(types.includes('response.reasoning_text.done'));
    const final = await stream.finalResponse();
    assert.equal(final.output_text, 'Yes');

    await client.responses.create({ model: 'thinker', input: 'Quick.', reasoning: { effort: 'minimal' } });
    assert.equal(binding.renderRequests.at(-1)!.enableThinking ?? false, false, 'minimal turns thinking off');
  });
});
