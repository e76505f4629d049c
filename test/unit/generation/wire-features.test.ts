import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lastValueFrom, of } from 'rxjs';
import { InvalidRequestError } from '../../../src/common/errors';
import { ChatRequestDto } from '../../../src/api/ollama/dto/chat-request.dto';
import { decodeFormat } from '../../../src/generation/prompt/format';
import { GenerationEvent } from '../../../src/generation/generation.types';
import {
  fromChatRequest,
  toChatChunk,
  toChatResponse,
  toGenerateChunk,
  toGenerateResponse,
} from '../../../src/api/ollama/ollama.mapper';

const lp = (token: string) => ({
  token,
  logprob: -0.5,
  bytes: Array.from(Buffer.from(token)),
  topLogprobs: [{ token: 'x', logprob: -1, bytes: [120] }],
});

const call = { id: 'call_abcdefgh', function: { index: 0, name: 'f', arguments: { a: 1 } } };

describe('wire mapping of thinking, tool calls and logprobs (§3.2, §3.3)', () => {
  it('decodes format: json, schema objects, and Ollama’s invalid format text', () => {
    assert.deepEqual(decodeFormat('json'), { kind: 'json' });
    assert.deepEqual(decodeFormat({ type: 'object' }), { kind: 'schema', schema: { type: 'object' } });
    assert.equal(decodeFormat(null), undefined);
    assert.equal(decodeFormat(''), undefined);
    assert.throws(
      () => decodeFormat('xml'),
      (e: unknown) =>
        e instanceof InvalidRequestError &&
        e.message === 'invalid format: "\\"xml\\""; expected "json" or a valid JSON Schema object',
    );
    assert.throws(() => decodeFormat(5), /invalid format: "5"; expected/);
    assert.throws(() => decodeFormat([1]), /invalid format: "\[1\]"/);
  });

  it('decodes chat tool calls, tool_name, thinking and logprobs', () => {
    const dto = Object.assign(new ChatRequestDto(), {
      model: 'm',
      logprobs: true,
      top_logprobs: 3,
      messages: [
        {
          role: 'Assistant',
          thinking: 'hm',
          tool_calls: [{ function: { name: 'f', arguments: '{"a":1}' } }],
        },
        { role: 'tool', content: 'r', tool_name: 'f', tool_call_id: 'c1' },
      ],
    });
    const cmd = fromChatRequest(dto, 0n);
    assert.equal(cmd.topLogprobs, 3);
    assert.deepEqual(cmd.messages[0], {
      role: 'assistant',
      content: '',
      thinking: 'hm',
      toolCalls: [{ function: { index: 0, name: 'f', arguments: { a: 1 } } }],
    });
    assert.deepEqual(cmd.messages[1], { role: 'tool', content: 'r', toolName: 'f', toolCallId: 'c1' });
    assert.equal(fromChatRequest(Object.assign(new ChatRequestDto(), { top_logprobs: 3 }), 0n).topLogprobs, undefined);
  });

  it('puts thinking, tool calls and logprobs on chat chunks', () => {
    const thinking = toChatChunk('m', { kind: 'delta', text: '', thinking: 'hm' });
    assert.deepEqual(thinking.message, { role: 'assistant', content: '', thinking: 'hm' });
    const withLp = toChatChunk('m', { kind: 'delta', text: 'Hi', logprobs: [lp('Hi')] });
    assert.deepEqual(withLp.logprobs, [
      { token: 'Hi', logprob: -0.5, bytes: [72, 105], top_logprobs: [{ token: 'x', logprob: -1, bytes: [120] }] },
    ]);
    const final = toChatChunk('m', { kind: 'done', reason: 'stop', toolCalls: [call] });
    assert.deepEqual(final.message.tool_calls, [
      { id: 'call_abcdefgh', function: { index: 0, name: 'f', arguments: { a: 1 } } },
    ]);
    const noId = toChatChunk('m', { kind: 'delta', text: '', toolCalls: [{ function: call.function }] });
    assert.deepEqual(noId.message.tool_calls, [{ function: call.function }], 'id omitted when empty');
  });

  it('concatenates content, thinking, tool calls and logprobs when not streaming', async () => {
    const events: GenerationEvent[] = [
      { kind: 'delta', text: '', thinking: 'a', logprobs: [lp('a')] },
      { kind: 'delta', text: 'B', toolCalls: [call], logprobs: [lp('B')] },
      { kind: 'done', reason: 'stop', text: 'C', toolCalls: [{ ...call, id: 'call_2' }] },
    ];
    const chat = await lastValueFrom(of(...events).pipe(toChatResponse('m')));
    assert.equal(chat.message.content, 'BC');
    assert.equal(chat.message.thinking, 'a');
    assert.equal(chat.message.tool_calls?.length, 2);
    assert.equal(chat.logprobs?.length, 2);
    assert.equal(chat.done_reason, 'stop');
    const gen = await lastValueFrom(of(...events).pipe(toGenerateResponse('m')));
    assert.equal(gen.response, 'BC');
    assert.equal(gen.thinking, 'a');
    assert.equal(gen.logprobs?.length, 2);
    assert.equal(gen.done, true);
  });

  it('puts thinking on generate chunks and omits it when empty', () => {
    assert.equal(toGenerateChunk('m', { kind: 'delta', text: '', thinking: 't' }).thinking, 't');
    assert.ok(!('thinking' in toGenerateChunk('m', { kind: 'delta', text: 'x' })));
  });
});
