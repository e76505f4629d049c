import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

/** The text of the last prompt the fake engine received (its tokens are char codes). */
function lastPrompt(binding: FakeBinding): string {
  const tokens = binding.submitted.at(-1)!.tokens;
  return String.fromCharCode(...Array.from(tokens).filter((x) => x >= 32 || x === 10));
}

// POST /v1/responses (and the beyond-Ollama store: previous_response_id, retrieve, delete) through the official
// `openai` client over a scripted FakeBinding (reference/ollama-api.md §12.6; clients.md §1.2).
describe('OpenAI /v1/responses (FakeBinding, openai client)', () => {
  let t: TestApp;
  let client: OpenAI;
  const binding = new FakeBinding();

  before(async () => {
    t = await createTestApp({ binding });
    client = new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: 'x', maxRetries: 0 });
    const path = join(t.modelsDir, 'fake.gguf');
    await writeTinyGguf(path, { chatTemplate: '{{ chatml }}' });
    const res = await postJson(`${t.baseUrl}/api/create`, { model: 'fake', modelfile: `FROM ${path}`, stream: false });
    assert.equal(res.status, 200);
  });

  beforeEach(() => {
    binding.renderRequests.length = 0;
    binding.script = () => ({ pieces: ['Hello', ',', ' world'] });
  });

  after(() => t.close());

  it('responses.create with a string input: a completed Response with one message and usage', async () => {
    const res = await client.responses.create({ model: 'fake', input: 'Hi', instructions: 'Be kind.' });
    assert.match(res.id, /^resp_[0-9a-f]{24}$/);
    assert.equal(res.object, 'response');
    assert.equal(res.status, 'completed');
    assert.equal(res.model, 'fake');
    assert.equal(res.output_text, 'Hello, world');
    assert.equal(res.error, null);
    assert.equal(res.incomplete_details, null);
    assert.equal(res.instructions, 'Be kind.');
    assert.equal(typeof res.created_at, 'number');
    assert.equal(res.output.length, 1);
    const msg = res.output[0];
    assert.equal(msg.type, 'message');
    if (msg.type !== 'message') return;
    assert.match(msg.id, /^msg_/);
    assert.equal(msg.role, 'assistant');
    assert.equal(msg.status, 'completed');
    assert.deepEqual(msg.content, [{ type: 'output_text', text: 'Hello, world', annotations: [], logprobs: [] }]);
    assert.equal(res.usage?.output_tokens, 3);
    assert.ok(res.usage!.input_tokens > 0);
    assert.equal(res.usage!.total_tokens, res.usage!.input_tokens + 3);
    assert.equal(typeof res.usage!.input_tokens_details.cached_tokens, 'number');
    assert.equal(res.usage!.output_tokens_details.reasoning_tokens, 0);
    assert.match(
      lastPrompt(binding),
      /^<\|im_start\|>system\nBe kind\.<\|im_end\|>\n<\|im_start\|>user\nHi<\|im_end\|>/,
    );
  });

  it('responses.create with items: roles, text parts and assistant history reach the prompt', async () => {
    const res = await client.responses.create({
      model: 'fake',
      input: [
        { role: 'developer', content: 'Rules.' },
        { role: 'user', content: [{ type: 'input_text', text: 'One' }] },
        { type: 'message', role: 'assistant', content: 'Two' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Three' }] },
      ],
      max_output_tokens: 2,
    });
    assert.equal(res.status, 'incomplete');
    assert.deepEqual(res.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(res.output_text, 'Hello,');
    assert.equal(res.max_output_tokens, 2);
    assert.deepEqual(
      binding.renderRequests.at(-1)!.messages.map((m) => [m.role, m.content]),
      [
        ['system', 'Rules.'],
        ['user', 'One'],
        ['assistant', 'Two'],
        ['user', 'Three'],
      ],
    );
  });

  it('responses.stream(): events in order with increasing sequence numbers, finalResponse() has the text', async () => {
    const stream = client.responses.stream({ model: 'fake', input: 'Hi' });
    const events: ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    const final = await stream.finalResponse();
    assert.equal(final.output_text, 'Hello, world');
    assert.equal(final.status, 'completed');
    assert.deepEqual(
      events.map((e) => e.sequence_number),
      events.map((_, i) => i),
    );
    assert.deepEqual(
      events.map((e) => e.type),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    const completed = events.at(-1)!;
    assert.equal(completed.type === 'response.completed' && completed.response.id, final.id);
  });

  it('the raw SSE wire: event lines equal to the data type, text/event-stream, no [DONE]', async () => {
    const res = await postJson(`${t.baseUrl}/v1/responses`, { model: 'fake', input: 'Hi', stream: true });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const text = await res.text();
    const frames = text.split('\n\n').filter((f) => f !== '');
    assert.ok(frames.length > 5);
    for (const frame of frames) {
      const [eventLine, dataLine, ...rest] = frame.split('\n');
      assert.deepEqual(rest, []);
      const data = JSON.parse(dataLine.slice('data: '.length)) as { type: string };
      assert.equal(eventLine, `event: ${data.type}`);
    }
    assert.ok(!text.includes('[DONE]'));
  });

  it('previous_response_id continues the conversation; retrieve() returns the stored response', async () => {
    const first = await client.responses.create({ model: 'fake', input: 'My name is Ann.', instructions: 'Old.' });
    binding.script = () => ({ pieces: ['Ann', '.'] });
    const second = await client.responses.create({
      model: 'fake',
      input: 'What is my name?',
      previous_response_id: first.id,
      instructions: 'New.',
    });
    assert.equal(second.previous_response_id, first.id);
    assert.equal(second.output_text, 'Ann.');
    assert.deepEqual(
      binding.renderRequests.at(-1)!.messages.map((m) => [m.role, m.content]),
      [
        ['system', 'New.'],
        ['user', 'My name is Ann.'],
        ['assistant', 'Hello, world'],
        ['user', 'What is my name?'],
      ],
      'the earlier instructions are not carried over',
    );
    const stream = client.responses.stream({ model: 'fake', input: 'And now?', previous_response_id: second.id });
    const third = await stream.finalResponse();
    assert.deepEqual(
      binding.renderRequests.at(-1)!.messages.map((m) => m.content),
      ['My name is Ann.', 'Hello, world', 'What is my name?', 'Ann.', 'And now?'],
    );
    const got = await client.responses.retrieve(third.id);
    assert.equal(got.id, third.id);
    assert.equal(got.output_text, 'Ann.');
    assert.deepEqual(
      got.output.map((o) => o.id),
      third.output.map((o) => o.id),
    );
    assert.deepEqual(got.usage, third.usage);
  });

  it('unknown ids are NotFoundErrors in OpenAI shape; store:false is not kept; delete removes', async () => {
    await assert.rejects(client.responses.retrieve('resp_missing'), (err: unknown) => {
      assert.ok(err instanceof OpenAI.NotFoundError);
      assert.equal(err.status, 404);
      assert.equal(err.message, "404 Response with id 'resp_missing' not found.");
      return true;
    });
    await assert.rejects(
      client.responses.create({ model: 'fake', input: 'x', previous_response_id: 'resp_missing' }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.NotFoundError);
        assert.equal(err.param, 'previous_response_id');
        return true;
      },
    );
    const raw = await postJson(`${t.baseUrl}/v1/responses`, {
      model: 'fake',
      input: 'x',
      previous_response_id: 'nope',
    });
    assert.equal(raw.status, 404);
    assert.deepEqual(await raw.json(), {
      error: {
        message: "Response with id 'nope' not found.",
        type: 'not_found_error',
        param: 'previous_response_id',
        code: null,
      },
    });
    const unstored = await client.responses.create({ model: 'fake', input: 'x', store: false });
    assert.equal((unstored as unknown as { store: boolean }).store, false);
    await assert.rejects(client.responses.retrieve(unstored.id), OpenAI.NotFoundError);
    await assert.rejects(
      client.responses.create({ model: 'fake', input: 'y', previous_response_id: unstored.id }),
      OpenAI.NotFoundError,
    );
    const kept = await client.responses.create({ model: 'fake', input: 'x' });
    const del = await fetch(`${t.baseUrl}/v1/responses/${kept.id}`, { method: 'DELETE' });
    assert.equal(del.status, 200);
    assert.deepEqual(await del.json(), { id: kept.id, object: 'response', deleted: true });
    await assert.rejects(client.responses.retrieve(kept.id), OpenAI.NotFoundError);
    await assert.rejects(client.responses.delete(kept.id), OpenAI.NotFoundError);
  });

  it('bad requests are BadRequestErrors; unknown fields are ignored; an unknown model is a NotFoundError', async () => {
    await assert.rejects(
      client.responses.create({ model: 'fake', input: 'x', temperature: 'hot' as unknown as number }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.BadRequestError);
        assert.equal(err.param, 'temperature');
        assert.equal(err.type, 'invalid_request_error');
        return true;
      },
    );
    await assert.rejects(
      client.responses.create({
        model: 'fake',
        input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }],
      }),
      OpenAI.BadRequestError,
    );
    const ok = await client.responses.create({
      model: 'fake',
      input: 'x',
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'pk',
      truncation: 'auto',
      service_tier: 'auto',
      safety_identifier: 'sid',
      top_logprobs: 0,
      background: false,
      reasoning: { effort: 'high', summary: 'auto' },
      metadata: { a: 'b' },
      ...({ client_metadata: { x: 1 }, stream_options: null } as object),
    });
    assert.equal(ok.status, 'completed');
    assert.deepEqual(ok.metadata, { a: 'b' });
    assert.deepEqual(ok.reasoning, { effort: 'high', summary: 'auto' });
    assert.equal(binding.renderRequests.at(-1)!.enableThinking ?? false, false, 'effort dropped for a non-thinker');
    await assert.rejects(client.responses.create({ model: 'nope', input: 'x' }), OpenAI.NotFoundError);
  });

  it('a mid-stream failure is an error event: the SDK raises APIError', async () => {
    binding.script = () => ({ pieces: ['partial'], error: { code: 'LLAMA_DECODE_FAILED', message: 'decode broke' } });
    const stream = client.responses.stream({ model: 'fake', input: 'Hi' });
    await assert.rejects(stream.finalResponse(), (err: unknown) => {
      assert.ok(err instanceof OpenAI.APIError, String(err));
      assert.match(err.message, /decode broke/);
      return true;
    });
    const res = await postJson(`${t.baseUrl}/v1/responses`, { model: 'fake', input: 'Hi', stream: true });
    const frames = (await res.text()).split('\n\n').filter((f) => f !== '');
    const last = frames.at(-1)!;
    assert.match(last, /^event: error\ndata: /);
    const data = JSON.parse(last.split('\n')[1].slice('data: '.length)) as Record<string, unknown>;
    assert.equal(data.type, 'error');
    assert.match(data.message as string, /decode broke/);
    assert.equal(data.sequence_number, frames.length - 1);
  });
});

// With LLAMAD_REDIS_URL naming a server that does not answer, the Redis responses store fails: lookups are a 503 the
// client may retry, a new response is still answered (its save is logged) but cannot be continued.
describe('OpenAI /v1/responses with an unreachable Redis store (FakeBinding)', () => {
  let t: TestApp;
  const binding = new FakeBinding();

  before(async () => {
    t = await createTestApp({ binding, config: { redisUrl: 'redis://127.0.0.1:1' } });
    const path = join(t.modelsDir, 'fake.gguf');
    await writeTinyGguf(path, { chatTemplate: '{{ chatml }}' });
    const res = await postJson(`${t.baseUrl}/api/create`, { model: 'fake', modelfile: `FROM ${path}`, stream: false });
    assert.equal(res.status, 200);
    binding.script = () => ({ pieces: ['Hi'] });
  });

  after(() => t.close());

  it('answers a new response, and 503 for previous_response_id, GET and DELETE', async () => {
    const created = await postJson(`${t.baseUrl}/v1/responses`, { model: 'fake', input: 'Hello' });
    assert.equal(created.status, 200);
    const id = ((await created.json()) as { id: string }).id;
    const continued = await postJson(`${t.baseUrl}/v1/responses`, {
      model: 'fake',
      input: 'Again',
      previous_response_id: id,
    });
    assert.equal(continued.status, 503);
    const body = (await continued.json()) as { error: { message: string } };
    assert.equal(body.error.message, 'responses store unavailable', 'the cause (the store address) stays in the log');
    assert.equal((await fetch(`${t.baseUrl}/v1/responses/${id}`)).status, 503);
    assert.equal((await fetch(`${t.baseUrl}/v1/responses/${id}`, { method: 'DELETE' })).status, 503);
  });
});
