import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AnthropicStreamConverter, encodeSseFrame } from '../../../../src/api/anthropic/anthropic-stream.converter';
import { GenerationEvent } from '../../../../src/generation';

const metrics = {
  totalDurationNs: 1,
  loadDurationNs: 1,
  promptEvalCount: 7,
  promptCachedCount: 0,
  promptEvalDurationNs: 1,
  evalCount: 3,
  evalDurationNs: 1,
};

function run(events: GenerationEvent[], stopSequences?: string[]): string {
  const c = new AnthropicStreamConverter('msg_1', 'm', 5, stopSequences);
  return [...events.flatMap((e) => c.process(e)), ...c.finish()].map(encodeSseFrame).join('');
}

const START =
  'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",' +
  '"model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}\n\n' +
  'event: ping\ndata: {"type":"ping"}\n\n';

describe('AnthropicStreamConverter (golden SSE)', () => {
  it('text', () => {
    const sse = run([
      { kind: 'delta', text: 'Hel' },
      { kind: 'delta', text: 'lo' },
      { kind: 'done', reason: 'stop', metrics },
    ]);
    assert.equal(
      sse,
      START +
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n' +
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}\n\n' +
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}\n\n' +
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n' +
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}\n\n' +
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    );
  });

  it('thinking then text, max_tokens', () => {
    const sse = run([
      { kind: 'delta', text: '', thinking: 'hm' },
      { kind: 'delta', text: 'A' },
      { kind: 'done', reason: 'length', metrics },
    ]);
    assert.equal(
      sse,
      START +
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}\n\n' +
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}\n\n' +
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n' +
        'event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}\n\n' +
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"A"}}\n\n' +
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n' +
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}\n\n' +
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    );
  });

  it('tool_use on the done event, de-duplicated by id', () => {
    const call = { id: 'call_1', function: { index: 0, name: 'get_weather', arguments: { city: 'Paris' } } };
    const sse = run([{ kind: 'done', reason: 'stop', metrics, toolCalls: [call, call] }]);
    assert.equal(
      sse,
      START +
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"call_1","name":"get_weather","input":{}}}\n\n' +
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"city\\":\\"Paris\\"}"}}\n\n' +
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n' +
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}\n\n' +
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    );
  });

  it('stop_sequence on message_delta when a stop sequence matched', () => {
    const sse = run(
      [
        { kind: 'delta', text: 'Hi' },
        { kind: 'done', reason: 'stop', metrics, stopSequence: '\n\nHuman:' },
      ],
      ['\n\nHuman:'],
    );
    assert.equal(
      sse,
      START +
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n' +
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n' +
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n' +
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"\\n\\nHuman:"},"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}\n\n' +
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    );
  });

  it('a template or Modelfile stop string ends with end_turn', () => {
    const frames = run([{ kind: 'done', reason: 'stop', metrics, stopSequence: '<|im_end|>' }], ['END']);
    assert.match(frames, /"delta":\{"stop_reason":"end_turn","stop_sequence":null\}/);
  });

  it('message_start carries the real prompt size once known; message_delta the reused/evaluated split', () => {
    const c = new AnthropicStreamConverter('msg_1', 'm', 5);
    c.setPromptTokens(120);
    const frames = [
      ...c.process({ kind: 'delta', text: 'x' }),
      ...c.process({
        kind: 'done',
        reason: 'stop',
        metrics: { ...metrics, promptEvalCount: 120, promptCachedCount: 90 },
      }),
    ];
    const start = frames.find((f) => f.event === 'message_start')!.data.message as { usage: object };
    assert.deepEqual(start.usage, {
      input_tokens: 120,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 0,
    });
    const delta = frames.find((f) => f.event === 'message_delta')!.data;
    assert.deepEqual(delta.usage, {
      input_tokens: 30,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 90,
      output_tokens: 3,
    });
  });

  it('finish() closes a stream that ended without done', () => {
    const c = new AnthropicStreamConverter('msg_1', 'm', 0);
    c.process({ kind: 'delta', text: 'x' });
    const closing = c.finish();
    assert.deepEqual(
      closing.map((f) => f.event),
      ['content_block_stop', 'message_delta', 'message_stop'],
    );
    // No metrics: only output_tokens, so the SDK keeps message_start's input counts.
    assert.deepEqual(closing[1].data.usage, { output_tokens: 0 });
    assert.deepEqual(c.finish(), []);
  });
});
