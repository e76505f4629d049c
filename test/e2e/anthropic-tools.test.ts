import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

const weather: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather of a city',
  input_schema: {
    type: 'object',
    required: ['city'],
    properties: { city: { type: 'string', description: 'City name' } },
  },
};

const TOOL_CALL = ['<tool_call>{"name":"get_weather",', '"arguments":{"city":"Tokyo"}}', '</tool_call>'];

/** The prompt of the last submitted task, decoded from the fake's one-token-per-char ids (BOS 1 dropped). */
function lastPrompt(binding: FakeBinding): string {
  const task = binding.submitted.at(-1)!;
  if (task.prompt !== undefined) return task.prompt;
  return String.fromCharCode(...Array.from(task.tokens).filter((id) => id !== 1));
}

// tool_use round trip on /v1/messages through the official @anthropic-ai/sdk over a scripted FakeBinding (native
// mode: the fake Jinja template's renderChat + parser): tool_use blocks out, a tool_result block back in (§12.8).
describe('Anthropic tool_use round trip (FakeBinding, official SDK)', () => {
  let t: TestApp;
  let client: Anthropic;
  const binding = new FakeBinding();

  before(async () => {
    t = await createTestApp({ binding });
    client = new Anthropic({ baseURL: t.baseUrl, apiKey: 'any-key', maxRetries: 0 });
    const path = join(t.modelsDir, 'tooly.gguf');
    await writeTinyGguf(path, { chatTemplate: '{% for tool in tools %}{{ tool }}{% endfor %}{{ chatml }}' });
    const res = await postJson(`${t.baseUrl}/api/create`, { model: 'tooly', modelfile: `FROM ${path}`, stream: false });
    assert.equal(res.status, 200);
  });

  beforeEach(() => {
    binding.chat.thinking = false;
    binding.renderRequests.length = 0;
  });

  after(() => t.close());

  const ask: Anthropic.MessageParam = { role: 'user', content: 'Weather in Tokyo?' };

  function assertToolUse(msg: Anthropic.Message): Anthropic.ToolUseBlock {
    assert.equal(msg.stop_reason, 'tool_use');
    assert.equal(msg.stop_sequence, null);
    const blocks = msg.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    assert.equal(blocks.length, 1);
    const block = blocks[0];
    assert.equal(typeof block.id, 'string');
    assert.ok(block.id.length > 0);
    assert.equal(block.name, 'get_weather');
    assert.deepEqual(block.input, { city: 'Tokyo' });
    return block;
  }

  it('messages.create returns a tool_use block, then renders the tool_result sent back', async () => {
    binding.script = () => ({ pieces: TOOL_CALL });
    const first = await client.messages.create({ model: 'tooly', max_tokens: 64, messages: [ask], tools: [weather] });
    const block = assertToolUse(first);
    assert.deepEqual(
      binding.renderRequests.at(-1)!.tools?.map((x) => x.name),
      ['get_weather'],
    );

    binding.script = () => ({ pieces: ['It is ', 'sunny.'] });
    const second = await client.messages.create({
      model: 'tooly',
      max_tokens: 64,
      tools: [weather],
      messages: [
        ask,
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: block.id, content: '{"temp":21}' }],
        },
      ],
    });
    assert.equal(second.stop_reason, 'end_turn');
    assert.deepEqual(second.content, [{ type: 'text', text: 'It is sunny.' }]);

    const rendered = binding.renderRequests.at(-1)!;
    const assistant = rendered.messages.find((m) => m.role === 'assistant')!;
    assert.equal(assistant.toolCalls?.[0].name, 'get_weather');
    assert.deepEqual(JSON.parse(assistant.toolCalls![0].arguments), { city: 'Tokyo' });
    const tool = rendered.messages.find((m) => m.role === 'tool')!;
    assert.equal(tool.toolName, 'get_weather');
    assert.equal(tool.content, '{"temp":21}');
    const prompt = lastPrompt(binding);
    assert.ok(prompt.includes('<|im_start|>tool get_weather\n{"temp":21}<|im_end|>'), prompt);
    assert.ok(prompt.includes('<tool_call>{"name":"get_weather","arguments":{"city":"Tokyo"}}</tool_call>'), prompt);
  });

  it('messages.stream(): tool_use events and a finalMessage() with the tool_use block', async () => {
    binding.script = () => ({ pieces: TOOL_CALL });
    const stream = client.messages.stream({ model: 'tooly', max_tokens: 64, messages: [ask], tools: [weather] });
    const events: string[] = [];
    stream.on('streamEvent', (e) => events.push(e.type));
    const final = await stream.finalMessage();
    const block = assertToolUse(final);
    assert.equal(events[0], 'message_start');
    assert.equal(events.at(-1), 'message_stop');
    assert.ok(events.includes('content_block_start'));

    binding.script = () => ({ pieces: ['Sunny', '.'] });
    const follow = await client.messages
      .stream({
        model: 'tooly',
        max_tokens: 64,
        tools: [weather],
        messages: [
          ask,
          { role: 'assistant', content: final.content },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: block.id, content: [{ type: 'text', text: 'rainy, 12C' }] },
              { type: 'text', text: 'Summarize.' },
            ],
          },
        ],
      })
      .finalMessage();
    assert.equal(follow.stop_reason, 'end_turn');
    assert.deepEqual(follow.content, [{ type: 'text', text: 'Sunny.' }]);
    const prompt = lastPrompt(binding);
    assert.ok(prompt.includes('<|im_start|>tool get_weather\nrainy, 12C<|im_end|>'), prompt);
    assert.ok(prompt.includes('<|im_start|>user\nSummarize.<|im_end|>'), prompt);
  });

  it('a stop string scripted on the fake surfaces as stop_sequence', async () => {
    binding.script = () => ({ pieces: ['Hello', ' there'], reason: 'stop', stopString: 'END' });
    const msg = await client.messages.create({
      model: 'tooly',
      max_tokens: 64,
      stop_sequences: ['END'],
      messages: [{ role: 'user', content: 'Hi' }],
    });
    assert.equal(msg.stop_reason, 'stop_sequence');
    assert.equal(msg.stop_sequence, 'END');
    assert.deepEqual(msg.content, [{ type: 'text', text: 'Hello there' }]);
    const final = await client.messages
      .stream({ model: 'tooly', max_tokens: 64, stop_sequences: ['END'], messages: [{ role: 'user', content: 'Hi' }] })
      .finalMessage();
    assert.equal(final.stop_reason, 'stop_sequence');
    assert.equal(final.stop_sequence, 'END');
  });
});
