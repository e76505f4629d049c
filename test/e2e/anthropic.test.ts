import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

// /v1/messages and /v1/messages/count_tokens end to end with the official @anthropic-ai/sdk client and the real
// addon on tiny-qwen2 (reference/clients.md §1.3, reference/ollama-api.md §12.8). The SDK's types no longer carry
// `temperature`, so the model is created with PARAMETER temperature 0 to make greedy output comparable.
describe('Anthropic messages layer with the official SDK', { skip: addon.skip }, () => {
  let t: TestApp;
  let client: Anthropic;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { contextLength: 512 } });
    client = new Anthropic({ baseURL: t.baseUrl, apiKey: 'any-key', maxRetries: 0 });
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: 'qwen',
      modelfile: `FROM ${TINY_QWEN2}\nPARAMETER temperature 0`,
      stream: false,
    });
    assert.equal(res.status, 200);
  });

  after(() => t?.close());

  it('messages.create without streaming returns one text block, max_tokens stop and usage', async () => {
    const msg = await client.messages.create({
      model: 'qwen',
      max_tokens: 6,
      system: 'You are terse.',
      messages: [{ role: 'user', content: 'Hello' }],
    });
    assert.equal(msg.type, 'message');
    assert.equal(msg.role, 'assistant');
    assert.match(msg.id, /^msg_/);
    assert.equal(msg.content[0].type, 'text');
    assert.equal(msg.stop_reason, 'max_tokens');
    assert.equal(msg.stop_sequence, null);
    assert.equal(msg.usage.output_tokens, 6);
    assert.ok(msg.usage.input_tokens > 0);
  });

  it('messages.stream() yields the same text as the non-streaming call (greedy) and a final message', async () => {
    const params = {
      model: 'qwen',
      max_tokens: 8,
      messages: [{ role: 'user' as const, content: 'Tell me a story' }],
    };
    const whole = await client.messages.create(params);
    const stream = client.messages.stream(params);
    const events: string[] = [];
    stream.on('streamEvent', (e) => events.push(e.type));
    const final = await stream.finalMessage();
    const text = (m: Anthropic.Message) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    assert.equal(text(final), text(whole));
    assert.equal(final.stop_reason, 'max_tokens');
    assert.equal(final.usage.output_tokens, 8);
    assert.equal(events[0], 'message_start');
    assert.equal(events.at(-1), 'message_stop');
    assert.ok(events.includes('content_block_delta'));
    assert.ok(events.includes('message_delta'));
  });

  it('every SSE frame has an event line equal to its data type', async () => {
    const res = await fetch(`${t.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'qwen',
        max_tokens: 3,
        stream: true,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    });
    assert.equal(res.status, 200);
    const frames = (await res.text()).split('\n\n').filter((f) => f.trim() !== '');
    assert.ok(frames.length >= 5);
    for (const frame of frames) {
      const event = /^event: (.+)$/m.exec(frame)?.[1];
      const data = JSON.parse(/^data: (.+)$/m.exec(frame)?.[1] ?? 'null') as { type: string };
      assert.equal(event, data.type);
    }
  });

  it('stop_sequences: a matched stop ends with stop_reason stop_sequence and the string (stream and not)', async () => {
    const base = { model: 'qwen', max_tokens: 16, messages: [{ role: 'user' as const, content: 'Tell me a story' }] };
    const text = (m: Anthropic.Message) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    const full = text(await client.messages.create(base));
    // Two non-whitespace characters after the first one, so the stop cuts the output after at least one character.
    const at = [...full].findIndex((_, i) => i >= 1 && /\S\S/.test(full.slice(i, i + 2)));
    assert.ok(at >= 1, `greedy output too short for a stop sequence: ${JSON.stringify(full)}`);
    const s = full.slice(at, at + 2);
    const expected = full.slice(0, full.indexOf(s));

    const msg = await client.messages.create({ ...base, stop_sequences: [s] });
    assert.equal(msg.stop_reason, 'stop_sequence');
    assert.equal(msg.stop_sequence, s);
    assert.equal(text(msg), expected);
    assert.ok(!text(msg).includes(s));

    const final = await client.messages.stream({ ...base, stop_sequences: [s] }).finalMessage();
    assert.equal(final.stop_reason, 'stop_sequence');
    assert.equal(final.stop_sequence, s);
    assert.equal(text(final), expected);
  });

  it('count_tokens renders and tokenizes the request', async () => {
    const short = await client.messages.countTokens({ model: 'qwen', messages: [{ role: 'user', content: 'Hi' }] });
    const long = await client.messages.countTokens({
      model: 'qwen',
      system: 'You are a helpful assistant that answers at length.',
      messages: [{ role: 'user', content: 'Hi there, how are you doing today?' }],
    });
    assert.ok(short.input_tokens > 0);
    assert.ok(long.input_tokens > short.input_tokens);
  });

  it('an unknown model is a NotFoundError and a missing max_tokens a BadRequestError', async () => {
    await assert.rejects(
      client.messages.create({ model: 'nope', max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) => err instanceof Anthropic.NotFoundError,
    );
    const res = await postJson(`${t.baseUrl}/v1/messages`, {
      model: 'qwen',
      messages: [{ role: 'user', content: 'x' }],
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');
    await assert.rejects(
      client.messages.create({ model: 'qwen', max_tokens: 0, messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) => err instanceof Anthropic.BadRequestError,
    );
  });
});
