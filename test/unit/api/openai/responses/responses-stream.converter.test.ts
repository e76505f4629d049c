import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResponseStream } from 'openai/lib/responses/ResponseStream';
import type {
  Response as SdkResponse,
  ResponseOutputItem as SdkOutputItem,
  ResponseUsage as SdkUsage,
} from 'openai/resources/responses/responses';
import {
  encodeResponsesFrame,
  ResponseEcho,
  ResponsesStreamConverter,
  ResponseStreamEvent,
} from '../../../../../src/api/openai/responses';
import { GenerationEvent, ToolCall } from '../../../../../src/generation';

const metrics = {
  totalDurationNs: 1,
  loadDurationNs: 1,
  promptEvalCount: 7,
  promptCachedCount: 4,
  promptEvalDurationNs: 1,
  evalCount: 5,
  evalDurationNs: 1,
};

const echo: ResponseEcho = {
  model: 'm',
  instructions: null,
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
};

const call: ToolCall = { id: 'fake_0', function: { index: 0, name: 'get_weather', arguments: { city: 'Tokyo' } } };

function run(events: GenerationEvent[]): { out: ResponseStreamEvent[]; c: ResponsesStreamConverter } {
  const c = new ResponsesStreamConverter('resp_1', echo, 1700000000);
  return { out: [...events.flatMap((e) => c.process(e)), ...c.finish()], c };
}

/** `[sequence_number, type, output_index?, content_index?]` of each event. */
function shape(events: ResponseStreamEvent[]): unknown[][] {
  return events.map((e) => {
    const row: unknown[] = [e.sequence_number, e.type];
    if ('output_index' in e) row.push(e.output_index);
    if ('content_index' in e) row.push(e.content_index);
    return row;
  });
}

/** Replays events through the official SDK's ResponseStream accumulator (the `responses.stream()` helper). */
async function sdkFinal(events: ResponseStreamEvent[]): Promise<SdkResponse> {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const e of events) controller.enqueue(new TextEncoder().encode(`${JSON.stringify(e)}\n`));
      controller.close();
    },
  });
  return ResponseStream.fromReadableStream(body as never).finalResponse();
}

describe('ResponsesStreamConverter', () => {
  it('text: exact event order, indices and sequence numbers from 0', () => {
    const { out, c } = run([
      { kind: 'delta', text: 'Hel' },
      { kind: 'delta', text: 'lo' },
      { kind: 'done', reason: 'stop', metrics },
    ]);
    assert.deepEqual(shape(out), [
      [0, 'response.created'],
      [1, 'response.in_progress'],
      [2, 'response.output_item.added', 0],
      [3, 'response.content_part.added', 0, 0],
      [4, 'response.output_text.delta', 0, 0],
      [5, 'response.output_text.delta', 0, 0],
      [6, 'response.output_text.done', 0, 0],
      [7, 'response.content_part.done', 0, 0],
      [8, 'response.output_item.done', 0],
      [9, 'response.completed'],
    ]);
    const created = out[0] as Extract<ResponseStreamEvent, { type: 'response.created' }>;
    assert.equal(created.response.status, 'in_progress');
    assert.deepEqual(created.response.output, []);
    assert.equal(created.response.usage, undefined);
    assert.equal(created.response.completed_at, null);
    const added = out[2] as Extract<ResponseStreamEvent, { type: 'response.output_item.added' }>;
    assert.match(added.item.id, /^msg_[0-9a-f]{24}$/);
    assert.deepEqual(added.item, {
      id: added.item.id,
      type: 'message',
      role: 'assistant',
      status: 'in_progress',
      content: [],
    });
    assert.deepEqual(out[4], {
      type: 'response.output_text.delta',
      item_id: added.item.id,
      output_index: 0,
      content_index: 0,
      delta: 'Hel',
      logprobs: [],
      sequence_number: 4,
    });
    assert.deepEqual(out[6], {
      type: 'response.output_text.done',
      item_id: added.item.id,
      output_index: 0,
      content_index: 0,
      text: 'Hello',
      logprobs: [],
      sequence_number: 6,
    });
    const final = c.response!;
    assert.equal(final.status, 'completed');
    assert.equal(final.id, 'resp_1');
    assert.equal(final.object, 'response');
    assert.equal(final.created_at, 1700000000);
    assert.equal(typeof final.completed_at, 'number');
    assert.equal(final.error, null);
    assert.equal(final.incomplete_details, null);
    assert.deepEqual(final.output, [
      {
        id: added.item.id,
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Hello', annotations: [], logprobs: [] }],
      },
    ]);
    assert.deepEqual(final.usage, {
      input_tokens: 7,
      input_tokens_details: { cached_tokens: 4, cache_write_tokens: 0 },
      output_tokens: 5,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 12,
    });
    assert.deepEqual((out[9] as { response: unknown }).response, final);
    assert.equal('output_text' in final, false, 'output_text is derived by the SDK, not sent');
    assert.deepEqual(c.assistantMessage(), { role: 'assistant', content: 'Hello' });
  });

  it('thinking, text and a tool call: three items in order, fresh call_ ids, reasoning_text events', () => {
    const { out, c } = run([
      { kind: 'delta', text: '', thinking: 'hm' },
      { kind: 'delta', text: '', thinking: 'm' },
      { kind: 'delta', text: 'Checking.' },
      { kind: 'done', reason: 'stop', metrics, toolCalls: [call] },
    ]);
    assert.deepEqual(shape(out), [
      [0, 'response.created'],
      [1, 'response.in_progress'],
      [2, 'response.output_item.added', 0],
      [3, 'response.content_part.added', 0, 0],
      [4, 'response.reasoning_text.delta', 0, 0],
      [5, 'response.reasoning_text.delta', 0, 0],
      [6, 'response.reasoning_text.done', 0, 0],
      [7, 'response.content_part.done', 0, 0],
      [8, 'response.output_item.done', 0],
      [9, 'response.output_item.added', 1],
      [10, 'response.content_part.added', 1, 0],
      [11, 'response.output_text.delta', 1, 0],
      [12, 'response.output_text.done', 1, 0],
      [13, 'response.content_part.done', 1, 0],
      [14, 'response.output_item.done', 1],
      [15, 'response.output_item.added', 2],
      [16, 'response.function_call_arguments.delta', 2],
      [17, 'response.function_call_arguments.done', 2],
      [18, 'response.output_item.done', 2],
      [19, 'response.completed'],
    ]);
    const final = c.response!;
    const [reasoning, message, fc] = final.output;
    assert.match(reasoning.id, /^rs_/);
    assert.deepEqual(reasoning, {
      id: reasoning.id,
      type: 'reasoning',
      summary: [],
      content: [{ type: 'reasoning_text', text: 'hmm' }],
    });
    assert.equal(message.type, 'message');
    assert.equal(fc.type, 'function_call');
    if (fc.type !== 'function_call') return;
    assert.match(fc.id, /^fc_[0-9a-f]{24}$/);
    assert.match(fc.call_id, /^call_[0-9a-f]{24}$/);
    assert.deepEqual(fc, {
      id: fc.id,
      type: 'function_call',
      status: 'completed',
      call_id: fc.call_id,
      name: 'get_weather',
      arguments: '{"city":"Tokyo"}',
    });
    const fcAdded = out[15] as Extract<ResponseStreamEvent, { type: 'response.output_item.added' }>;
    assert.deepEqual(fcAdded.item, { ...fc, status: 'in_progress', arguments: '' });
    assert.deepEqual(out[17], {
      type: 'response.function_call_arguments.done',
      item_id: fc.id,
      output_index: 2,
      arguments: '{"city":"Tokyo"}',
      sequence_number: 17,
    });
    assert.equal(final.usage?.output_tokens_details.reasoning_tokens, 2);
    assert.deepEqual(c.assistantMessage(), {
      role: 'assistant',
      content: 'Checking.',
      thinking: 'hmm',
      toolCalls: [{ id: fc.call_id, function: { index: 0, name: 'get_weather', arguments: { city: 'Tokyo' } } }],
    });
  });

  it('the token limit: message status incomplete, response.incomplete with incomplete_details', () => {
    const { out, c } = run([
      { kind: 'delta', text: 'A' },
      { kind: 'done', reason: 'length', metrics },
    ]);
    assert.equal(out.at(-1)!.type, 'response.incomplete');
    assert.equal(c.response!.status, 'incomplete');
    assert.deepEqual(c.response!.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal((c.response!.output[0] as { status: string }).status, 'incomplete');
  });

  it('no output at all (a source without done): an empty message item, then response.completed', () => {
    const { out, c } = run([]);
    assert.deepEqual(
      out.map((e) => e.type),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    assert.equal(c.finish().length, 0);
    assert.deepEqual((c.response!.output[0] as { content: unknown }).content, [
      { type: 'output_text', text: '', annotations: [], logprobs: [] },
    ]);
    assert.equal(c.response!.usage?.total_tokens, 0);
    assert.equal(c.response!.status, 'completed');
  });

  it('errorEvent takes the next sequence number', () => {
    const c = new ResponsesStreamConverter('resp_3', echo);
    const first = c.process({ kind: 'delta', text: 'x' });
    const err = c.errorEvent(new Error('boom'));
    assert.deepEqual(err, {
      type: 'error',
      code: 'api_error',
      message: 'boom',
      param: null,
      sequence_number: first.length,
    });
  });

  it('SSE frames carry an event line equal to the data type', () => {
    const { out } = run([{ kind: 'done', reason: 'stop', metrics }]);
    const frame = encodeResponsesFrame(out[0]);
    assert.ok(frame.startsWith('event: response.created\ndata: {"type":"response.created",'));
    assert.ok(frame.endsWith('}\n\n'));
  });

  it("the official SDK's stream accumulator rebuilds the same response", async () => {
    const { out, c } = run([
      { kind: 'delta', text: '', thinking: 'hm' },
      { kind: 'delta', text: 'Hel' },
      { kind: 'delta', text: 'lo' },
      { kind: 'done', reason: 'stop', metrics, toolCalls: [call, { ...call, id: 'fake_0' }] },
    ]);
    const final = await sdkFinal(out);
    assert.equal(final.output_text, 'Hello');
    assert.equal(final.status, 'completed');
    assert.deepEqual(
      final.output.map((o) => o.type),
      ['reasoning', 'message', 'function_call', 'function_call'],
    );
    // The SDK adds its parse results (`parsed`, `parsed_arguments`); everything else must be what the server sent.
    const unparsed = JSON.stringify(final.output, (k, v: unknown) =>
      k === 'parsed' || k === 'parsed_arguments' ? undefined : v,
    );
    assert.deepEqual(JSON.parse(unparsed), JSON.parse(JSON.stringify(c.response!.output)));
  });

  it('output items and usage are assignable to the SDK types', () => {
    const { c } = run([
      { kind: 'delta', text: '', thinking: 'hm' },
      { kind: 'done', reason: 'stop', metrics, text: 'ok', toolCalls: [call] },
    ]);
    const items: SdkOutputItem[] = c.response!.output;
    const usage: SdkUsage = c.response!.usage!;
    const response: SdkResponse = { ...c.response!, tool_choice: 'auto', tools: [], reasoning: null, output_text: '' };
    assert.equal(items.length, 3);
    assert.equal(usage.total_tokens, 12);
    assert.equal(response.object, 'response');
  });
});
