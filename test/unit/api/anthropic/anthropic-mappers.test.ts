import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AnthropicMessageAccumulator,
  anthropicErrorType,
  applyToolChoice,
  fromMessagesRequest,
  toAnthropicError,
  toStopReason,
  toUsage,
} from '../../../../src/api/anthropic';
import { InvalidRequestError, ModelNotFoundError, ServerBusyError } from '../../../../src/common/errors';

const T0 = BigInt(0);

describe('fromMessagesRequest', () => {
  it('maps system blocks, content blocks, tools, options and thinking', () => {
    const cmd = fromMessagesRequest(
      {
        model: 'm',
        max_tokens: 64,
        system: [
          { type: 'text', text: 'A' },
          { type: 'text', text: 'B' },
        ],
        temperature: 0.5,
        top_p: 0.9,
        top_k: 20,
        stop_sequences: ['END'],
        thinking: { type: 'enabled', budget_tokens: 100 },
        tool_choice: { type: 'auto' },
        tools: [{ name: 'w', description: 'd', input_schema: { type: 'object' } }],
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'hi' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAA' } },
            ],
          },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'w', input: { c: 1 } }] },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 't1', content: 'sunny' },
              { type: 'text', text: 'ok?' },
            ],
          },
        ],
      },
      T0,
    );
    assert.deepEqual(cmd.messages, [
      { role: 'system', content: 'AB' },
      { role: 'user', content: 'hi', images: ['AAA'] },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 't1', function: { index: 0, name: 'w', arguments: { c: 1 } } }],
      },
      { role: 'tool', content: 'sunny', toolCallId: 't1', toolName: 'w' },
      { role: 'user', content: 'ok?' },
    ]);
    assert.deepEqual(cmd.options, { num_predict: 64, temperature: 0.5, top_p: 0.9, top_k: 20, stop: ['END'] });
    assert.equal(cmd.think, true);
    assert.deepEqual(cmd.tools, [
      { type: 'function', function: { name: 'w', description: 'd', parameters: { type: 'object' } } },
    ]);
  });

  it('rejects missing max_tokens, model, messages and bad blocks with §5.4 texts', () => {
    const err = (body: unknown, message: string) =>
      assert.throws(
        () => fromMessagesRequest(body, T0),
        (e: unknown) => e instanceof InvalidRequestError && e.message === message,
      );
    err({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, 'max_tokens is required and must be positive');
    err(
      { model: 'm', max_tokens: 0, messages: [{ role: 'user', content: 'x' }] },
      'max_tokens is required and must be positive',
    );
    err({ max_tokens: 1, messages: [] }, 'model is required');
    err({ model: 'm', max_tokens: 1, messages: [] }, 'messages is required');
    err(
      {
        model: 'm',
        max_tokens: 1,
        messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'x' } }] }],
      },
      'invalid image source type: url. Only base64 images are supported.',
    );
    err(
      {
        model: 'm',
        max_tokens: 1,
        messages: [{ role: 'assistant', content: [{ type: 'tool_use', name: 'w', input: {} }] }],
      },
      "tool_use block missing required 'id' field",
    );
    assert.equal(fromMessagesRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, T0, false).model, 'm');
  });
});

describe('response and error mapping', () => {
  it('accumulates thinking, text, tool_use with stop_sequence null', () => {
    const acc = new AnthropicMessageAccumulator('msg_x', 'm');
    acc.add({ kind: 'delta', text: 'a', thinking: 't' });
    acc.add({
      kind: 'done',
      reason: 'stop',
      text: 'b',
      toolCalls: [{ id: 'c', function: { index: 0, name: 'f', arguments: {} } }],
      metrics: {
        totalDurationNs: 0,
        loadDurationNs: 0,
        promptEvalCount: 4,
        promptCachedCount: 0,
        promptEvalDurationNs: 0,
        evalCount: 2,
        evalDurationNs: 0,
      },
    });
    assert.deepEqual(acc.result(), {
      id: 'msg_x',
      type: 'message',
      role: 'assistant',
      model: 'm',
      content: [
        { type: 'thinking', thinking: 't' },
        { type: 'text', text: 'ab' },
        { type: 'tool_use', id: 'c', name: 'f', input: {} },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 4, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 2 },
    });
  });

  it('reports the matched stop sequence', () => {
    const acc = new AnthropicMessageAccumulator('msg_y', 'm', ['END']);
    acc.add({ kind: 'delta', text: 'Hello' });
    acc.add({ kind: 'done', reason: 'stop', stopSequence: 'END' });
    const r = acc.result();
    assert.equal(r.stop_reason, 'stop_sequence');
    assert.equal(r.stop_sequence, 'END');
    assert.deepEqual(r.content, [{ type: 'text', text: 'Hello' }]);
  });

  it('a stop string that is not one of the request stop_sequences (template, Modelfile) is end_turn', () => {
    const acc = new AnthropicMessageAccumulator('msg_t', 'm', ['END']);
    acc.add({ kind: 'done', reason: 'stop', stopSequence: '<|im_end|>' });
    assert.equal(acc.result().stop_reason, 'end_turn');
    assert.equal(acc.result().stop_sequence, null);
    const none = new AnthropicMessageAccumulator('msg_u', 'm');
    none.add({ kind: 'done', reason: 'stop', stopSequence: 'END' });
    assert.equal(none.result().stop_reason, 'end_turn', 'no stop_sequences in the request');
    assert.equal(toStopReason('stop', false, undefined, ['END']), 'end_turn', 'end of generation');
    assert.equal(toStopReason('stop', false, 'END', ['X', 'END']), 'stop_sequence');
  });

  it('usage: input_tokens is the prompt minus its reused part, cache_read_input_tokens the reused part', () => {
    const m = {
      totalDurationNs: 0,
      loadDurationNs: 0,
      promptEvalCount: 120,
      promptCachedCount: 100,
      promptEvalDurationNs: 0,
      evalCount: 5,
      evalDurationNs: 0,
    };
    assert.deepEqual(toUsage(m), {
      input_tokens: 20,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 100,
      output_tokens: 5,
    });
    assert.deepEqual(toUsage(undefined), {
      input_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 0,
    });
  });

  it('every /v1/messages command never cuts its prompt (growContext), count_tokens too', () => {
    const body = { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] };
    assert.equal(fromMessagesRequest(body, T0).growContext, true);
    assert.equal(fromMessagesRequest({ ...body, max_tokens: undefined }, T0, false).growContext, true);
  });

  it('a tool call wins over a stop sequence; length keeps max_tokens', () => {
    const acc = new AnthropicMessageAccumulator('msg_z', 'm', ['END']);
    acc.add({
      kind: 'done',
      reason: 'stop',
      stopSequence: 'END',
      toolCalls: [{ id: 'c', function: { index: 0, name: 'f', arguments: {} } }],
    });
    assert.equal(acc.result().stop_reason, 'tool_use');
    assert.equal(acc.result().stop_sequence, null);
    const len = new AnthropicMessageAccumulator('msg_w', 'm');
    len.add({ kind: 'done', reason: 'length' });
    assert.equal(len.result().stop_reason, 'max_tokens');
    assert.equal(len.result().stop_sequence, null);
  });

  it('maps errors to Anthropic types', () => {
    assert.equal(anthropicErrorType(500), 'api_error');
    const nf = toAnthropicError(new ModelNotFoundError('x'));
    assert.equal(nf.status, 404);
    assert.deepEqual(nf.body.error, { type: 'not_found_error', message: "model 'x' not found" });
    assert.match(nf.body.request_id, /^req_[0-9a-f]{24}$/);
    assert.equal(toAnthropicError(new ServerBusyError()).body.error.type, 'overloaded_error');
    assert.equal(toAnthropicError(new InvalidRequestError('bad')).body.error.type, 'invalid_request_error');
    assert.equal(toAnthropicError(new Error('boom')).body.error.type, 'api_error');
  });
});

describe('applyToolChoice (Anthropic tool_choice)', () => {
  const tool = (name: string) => ({
    type: 'function',
    function: { name, parameters: { type: 'object', properties: {} } },
  });
  const tools = [tool('a'), tool('b')];
  const names = (r: ReturnType<typeof applyToolChoice>) => r.tools?.map((t) => t.function?.name);

  it('auto or absent keeps every tool with no forced call; none drops them', () => {
    assert.deepEqual(applyToolChoice(tools, undefined), { tools });
    assert.deepEqual(applyToolChoice(tools, { type: 'auto' }), { tools });
    assert.deepEqual(applyToolChoice(tools, { type: 'none' }), {});
    assert.deepEqual(applyToolChoice(undefined, { type: 'any' }), {});
  });

  it('any forces a call; tool forces that tool only; an unknown name is a 400', () => {
    const any = applyToolChoice(tools, { type: 'any' });
    assert.equal(any.toolChoice, 'required');
    assert.deepEqual(names(any), ['a', 'b']);
    const named = applyToolChoice(tools, { type: 'tool', name: 'b' });
    assert.equal(named.toolChoice, 'required');
    assert.deepEqual(names(named), ['b']);
    assert.throws(() => applyToolChoice(tools, { type: 'tool', name: 'z' }), InvalidRequestError);
  });

  it('fromMessagesRequest carries the choice into the chat command', () => {
    const cmd = fromMessagesRequest(
      {
        model: 'm',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x' }],
        tools: [{ name: 'a', input_schema: { type: 'object' } }],
        tool_choice: { type: 'any' },
      },
      0n,
    );
    assert.equal(cmd.toolChoice, 'required');
    assert.equal(cmd.tools?.length, 1);
  });
});
