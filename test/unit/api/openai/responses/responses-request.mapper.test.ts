import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../../src/common/errors';
import { decodeInput, decodeResponsesRequest, previousResponseIdOf } from '../../../../../src/api/openai/responses';
import type { ChatMessage } from '../../../../../src/generation';

const T0 = 1n;
const PNG = 'data:image/png;base64,iVBORw0KGgo=';

function decode(body: Record<string, unknown>, prior: ChatMessage[] = []) {
  return decodeResponsesRequest({ model: 'm', ...body }, prior, T0);
}

function rejects(fn: () => unknown, message: RegExp, param?: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof InvalidRequestError, String(err));
    assert.match(err.message, message);
    if (param !== undefined) assert.equal(err.param, param);
    return true;
  });
}

const weather = {
  type: 'function',
  name: 'get_weather',
  description: 'Weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } } },
  strict: true,
};
const time = { type: 'function', name: 'get_time', parameters: { type: 'object' } };

describe('decodeResponsesRequest', () => {
  it('a string input is one user message; instructions come first; defaults and echo', () => {
    const { command, input, echo, stream } = decode({ input: 'Hi', instructions: 'Be brief.' });
    assert.deepEqual(command.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
    ]);
    assert.deepEqual(input, [{ role: 'user', content: 'Hi' }]);
    assert.equal(command.model, 'm');
    assert.equal(command.growContext, true);
    assert.deepEqual(command.options, { temperature: 1 });
    assert.equal(command.think, undefined);
    assert.equal(command.tools, undefined);
    assert.equal(command.format, undefined);
    assert.equal(stream, false);
    assert.deepEqual(echo, {
      model: 'm',
      instructions: 'Be brief.',
      max_output_tokens: null,
      metadata: {},
      parallel_tool_calls: true,
      previous_response_id: null,
      reasoning: null,
      store: true,
      temperature: 1,
      text: { format: { type: 'text' } },
      tool_choice: 'auto',
      tools: [],
      top_p: null,
      prompt_cache_key: null,
      safety_identifier: null,
    });
  });

  it('sampling fields, store, metadata, user and stream', () => {
    const { command, echo, stream } = decode({
      input: 'x',
      max_output_tokens: 64,
      temperature: 0.2,
      top_p: 0.9,
      store: false,
      metadata: { k: 'v' },
      user: 'u1',
      parallel_tool_calls: false,
      stream: true,
    });
    assert.deepEqual(command.options, { num_predict: 64, temperature: 0.2, top_p: 0.9 });
    assert.equal(stream, true);
    assert.equal(echo.store, false);
    assert.deepEqual(echo.metadata, { k: 'v' });
    assert.equal(echo.user, 'u1');
    assert.equal(echo.parallel_tool_calls, false);
    assert.equal(echo.max_output_tokens, 64);
    assert.equal(echo.top_p, 0.9);
  });

  it('fields real clients send that this layer does not use are accepted and ignored', () => {
    const { command } = decode({
      input: 'x',
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'k',
      client_metadata: { a: 1 },
      reasoning: { effort: 'low', summary: 'auto' },
      truncation: 'auto',
      service_tier: 'auto',
      safety_identifier: 's',
      stream_options: { include_obfuscation: false },
      top_logprobs: 0,
      background: false,
      conversation: null,
      unknown_field: { deep: true },
    });
    assert.deepEqual(command.messages, [{ role: 'user', content: 'x' }]);
    assert.equal(command.think, 'low');
  });

  it('type errors in known fields are InvalidRequestErrors naming the field', () => {
    rejects(() => decode({ input: 'x', temperature: 'hot' }), /'temperature'/, 'temperature');
    rejects(() => decode({ input: 'x', max_output_tokens: '5' }), /'max_output_tokens'/, 'max_output_tokens');
    rejects(() => decode({ input: 'x', store: 'yes' }), /'store'/, 'store');
    rejects(() => decode({ input: 'x', instructions: 5 }), /'instructions'/, 'instructions');
    rejects(() => decode({ input: 'x', metadata: { a: 1 } }), /'metadata'/, 'metadata');
    rejects(() => decode({ input: 'x', tools: {} }), /'tools'/, 'tools');
    rejects(() => decode({ input: 'x', model: 3 }), /'model'/, 'model');
    rejects(() => decode({ input: 5 }), /invalid input/, 'input');
    rejects(() => decode({}), /input is required/, 'input');
    rejects(() => decodeResponsesRequest([], [], T0), /invalid request body/);
    rejects(() => previousResponseIdOf({ previous_response_id: 7 }), /'previous_response_id'/, 'previous_response_id');
  });

  it('reasoning.effort → think: none/minimal off, low/medium/high as is, xhigh/max → max; others 400', () => {
    const think = (effort: unknown) => decode({ input: 'x', reasoning: { effort } }).command.think;
    assert.equal(think('none'), false);
    assert.equal(think('minimal'), false);
    assert.equal(think('low'), 'low');
    assert.equal(think('medium'), 'medium');
    assert.equal(think('high'), 'high');
    assert.equal(think('xhigh'), 'max');
    assert.equal(think(null), undefined);
    assert.deepEqual(decode({ input: 'x', reasoning: { effort: 'high', summary: 'auto' } }).echo.reasoning, {
      effort: 'high',
      summary: 'auto',
    });
    rejects(() => think('extreme'), /invalid reasoning effort/, 'reasoning.effort');
  });

  it('text.format: json_schema → schema, json_object → json, text → free text; bad types 400', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    const s = decode({ input: 'x', text: { format: { type: 'json_schema', name: 'out', schema, strict: true } } });
    assert.deepEqual(s.command.format, { kind: 'schema', schema });
    assert.deepEqual(s.echo.text, { format: { type: 'json_schema', name: 'out', schema, strict: true } });
    assert.deepEqual(decode({ input: 'x', text: { format: { type: 'json_object' } } }).command.format, {
      kind: 'json',
    });
    assert.equal(
      decode({ input: 'x', text: { format: { type: 'text' }, verbosity: 'low' } }).command.format,
      undefined,
    );
    assert.deepEqual(decode({ input: 'x', text: { verbosity: 'low' } }).echo.text, {
      format: { type: 'text' },
      verbosity: 'low',
    });
    rejects(() => decode({ input: 'x', text: { format: { type: 'xml' } } }), /invalid text.format type/, 'text.format');
    rejects(() => decode({ input: 'x', text: { format: { type: 'json_schema' } } }), /schema must be an object/);
  });

  it('function tools → definitions; tool_choice none / required / named / allowed_tools', () => {
    const base = { input: 'x', tools: [weather, time, { type: 'web_search' }] };
    const auto = decode(base);
    assert.deepEqual(auto.command.tools, [
      {
        type: 'function',
        function: { name: 'get_weather', description: 'Weather of a city', parameters: weather.parameters },
      },
      { type: 'function', function: { name: 'get_time', parameters: { type: 'object' } } },
    ]);
    assert.equal(auto.command.toolChoice, undefined);
    assert.deepEqual(auto.echo.tools, [
      weather,
      { type: 'function', name: 'get_time', parameters: { type: 'object' }, strict: null },
      { type: 'web_search' },
    ]);
    const none = decode({ ...base, tool_choice: 'none' });
    assert.equal(none.command.tools, undefined);
    assert.equal(none.echo.tool_choice, 'none');
    const required = decode({ ...base, tool_choice: 'required' });
    assert.equal(required.command.toolChoice, 'required');
    assert.equal(required.command.tools?.length, 2);
    const named = decode({ ...base, tool_choice: { type: 'function', name: 'get_time' } });
    assert.equal(named.command.toolChoice, 'required');
    assert.deepEqual(
      named.command.tools?.map((t) => t.function?.name),
      ['get_time'],
    );
    const allowed = decode({
      ...base,
      tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'get_weather' }] },
    });
    assert.deepEqual(
      allowed.command.tools?.map((t) => t.function?.name),
      ['get_weather'],
    );
    assert.equal(allowed.command.toolChoice, undefined);
    rejects(
      () => decode({ ...base, tool_choice: { type: 'function', name: 'nope' } }),
      /unknown tool: nope/,
      'tool_choice',
    );
    rejects(() => decode({ ...base, tool_choice: 'sometimes' }), /invalid tool_choice/, 'tool_choice');
    rejects(() => decode({ input: 'x', tools: [{ type: 'function' }] }), /need a string name/, 'tools');
  });

  it('prior conversation goes between instructions and the new input', () => {
    const prior: ChatMessage[] = [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'answer' },
    ];
    const { command, input } = decode({ input: 'second', instructions: 'sys' }, prior);
    assert.deepEqual(
      command.messages.map((m) => m.content),
      ['sys', 'first', 'answer', 'second'],
    );
    assert.deepEqual(input, [{ role: 'user', content: 'second' }]);
    assert.equal(decode({}, prior).command.messages.length, 2, 'no new input is fine with a prior conversation');
  });
});

describe('decodeInput', () => {
  it('message items: roles, developer → system, text parts concatenated, images collected', () => {
    const out = decodeInput([
      { role: 'developer', content: 'dev' },
      { type: 'message', role: 'system', content: [{ type: 'input_text', text: 'sys' }] },
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'look ' },
          { type: 'input_image', image_url: PNG, detail: 'auto' },
          { type: 'input_text', text: 'here' },
        ],
      },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'seen', annotations: [] }] },
    ]);
    assert.deepEqual(out, [
      { role: 'system', content: 'dev' },
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'look here', images: ['iVBORw0KGgo='] },
      { role: 'assistant', content: 'seen' },
    ]);
  });

  it('reasoning + message + function_calls form one assistant turn; outputs name their tool by call_id', () => {
    const out = decodeInput([
      { role: 'user', content: 'Weather?' },
      { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 'think' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
      { type: 'function_call', call_id: 'call_a', name: 'get_weather', arguments: '{"city":"Tokyo"}' },
      { type: 'function_call', call_id: 'call_b', name: 'get_time', arguments: '' },
      { type: 'function_call_output', call_id: 'call_a', output: '{"temp":21}' },
      { type: 'function_call_output', call_id: 'call_b', output: [{ type: 'input_text', text: 'noon' }] },
      { type: 'item_reference', id: 'x' },
    ]);
    assert.deepEqual(out, [
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: 'Checking.',
        thinking: 'think',
        toolCalls: [
          { id: 'call_a', function: { index: 0, name: 'get_weather', arguments: { city: 'Tokyo' } } },
          { id: 'call_b', function: { index: 1, name: 'get_time', arguments: {} } },
        ],
      },
      { role: 'tool', content: '{"temp":21}', toolName: 'get_weather', toolCallId: 'call_a' },
      { role: 'tool', content: 'noon', toolName: 'get_time', toolCallId: 'call_b' },
    ]);
  });

  it('a function_call without a preceding assistant message starts one; tool names come from the prior turns', () => {
    const prior: ChatMessage[] = [
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'call_p', function: { index: 0, name: 'lookup', arguments: {} } }],
      },
    ];
    assert.deepEqual(decodeInput([{ type: 'function_call_output', call_id: 'call_p', output: 'r' }], prior), [
      { role: 'tool', content: 'r', toolName: 'lookup', toolCallId: 'call_p' },
    ]);
    assert.deepEqual(decodeInput([{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' }]), [
      { role: 'assistant', content: '', toolCalls: [{ id: 'c', function: { index: 0, name: 'f', arguments: {} } }] },
    ]);
  });

  it('rejections: files, audio without data, http images, bad parts, roles and call arguments', () => {
    const msg = (part: unknown) => [{ role: 'user', content: [part] }];
    rejects(() => decodeInput(msg({ type: 'input_file', file_id: 'f' })), /file inputs are not currently supported/);
    rejects(() => decodeInput(msg({ type: 'input_audio' })), /invalid input_audio format/, 'input');
    rejects(() => decodeInput(msg({ type: 'input_image', image_url: 'https://x/y.png' })), /image URLs/, 'input');
    rejects(() => decodeInput(msg({ type: 'input_image', file_id: 'f' })), /file ids/);
    rejects(() => decodeInput(msg({ type: 'video' })), /invalid content part type/);
    rejects(() => decodeInput([{ role: 'robot', content: 'x' }]), /invalid role/);
    rejects(() => decodeInput([{ role: 'user', content: 5 }]), /invalid message content/);
    rejects(() => decodeInput(['x']), /invalid input item/);
    rejects(() => decodeInput([{ content: 'x' }]), /missing type/);
    rejects(() => decodeInput([{ type: 'function_call', call_id: 'c', name: 'f', arguments: '[1' }]), /arguments/);
    rejects(() => decodeInput([{ type: 'function_call', name: 'f' }]), /call_id and name/);
    rejects(() => decodeInput([{ type: 'function_call_output', output: 'x' }]), /call_id/);
  });
});
