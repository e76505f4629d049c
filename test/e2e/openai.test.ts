import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import { ensureTestModels, TINY_BERT, TINY_QWEN2 } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const embedSkip =
  addon.skip ??
  (typeof addon.binding?.Context.prototype.embed !== 'function' ? 'native addon has no Context.embed' : undefined);
const grammarSkip =
  addon.skip ??
  (typeof addon.binding?.jsonSchemaToGrammar !== 'function' ? 'native addon has no jsonSchemaToGrammar' : undefined);

const FINISH = ['stop', 'length', 'tool_calls'];
const norm = (v: ArrayLike<number>) => Math.sqrt(Array.from(v).reduce((s, x) => s + x * x, 0));

// The OpenAI-compatible /v1 layer (reference/ollama-api.md §12.2–§12.5) through the official `openai` client,
// against the real app and the REAL addon with tiny-qwen2 (random weights: only shapes are checked) and tiny-bert.
describe('OpenAI /v1 with the official client (§12.2–§12.5)', { skip: addon.skip }, () => {
  let t: TestApp;
  let client: OpenAI;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 512 } });
    client = new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: 'x', maxRetries: 0 });
    for (const [model, path] of [
      ['tiny', TINY_QWEN2],
      ['bert', TINY_BERT],
    ]) {
      const res = await postJson(`${t.baseUrl}/api/create`, { model, modelfile: `FROM ${path}`, stream: false });
      assert.equal(res.status, 200, model);
    }
  });

  after(() => t?.close());

  it('chat.completions.create (non-stream): chat.completion with an assistant message and usage', async () => {
    const res = await client.chat.completions.create({
      model: 'tiny',
      messages: [
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Hello' }] },
      ],
      max_tokens: 8,
      seed: 1,
    });
    assert.equal(res.object, 'chat.completion');
    assert.match(res.id, /^chatcmpl-/);
    assert.equal(res.model, 'tiny');
    assert.equal(res.choices.length, 1);
    assert.equal(res.choices[0].message.role, 'assistant');
    assert.equal(typeof res.choices[0].message.content, 'string');
    assert.equal(res.choices[0].finish_reason, 'length');
    assert.equal(res.usage?.completion_tokens, 8);
    assert.ok((res.usage?.prompt_tokens ?? 0) > 0);
    assert.equal(res.usage?.total_tokens, (res.usage?.prompt_tokens ?? 0) + 8);
  });

  it('chat.completions.create (stream): role first, finish_reason last, usage chunk, [DONE]', async () => {
    const stream = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'Hi' }],
      max_completion_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    assert.ok(chunks.length >= 3);
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    for (const c of chunks) assert.equal(c.object, 'chat.completion.chunk');
    assert.equal(new Set(chunks.map((c) => c.id)).size, 1);
    const usage = chunks[chunks.length - 1];
    assert.deepEqual(usage.choices, []);
    assert.equal(usage.usage?.completion_tokens, 5);
    const finish = chunks[chunks.length - 2];
    assert.equal(finish.choices[0].finish_reason, 'length');
    assert.deepEqual(finish.choices[0].delta, {});
    for (const c of chunks.slice(0, -2)) assert.equal(c.choices[0].finish_reason, null);
  });

  it('the .stream() helper accumulates a final completion (roles and finish reasons check out)', async () => {
    const runner = client.chat.completions.stream({
      model: 'tiny',
      messages: [{ role: 'user', content: 'Count.' }],
      max_tokens: 6,
      temperature: 0,
    });
    let deltas = '';
    runner.on('content', (d) => (deltas += d));
    const final = await runner.finalChatCompletion();
    assert.equal(final.choices[0].message.role, 'assistant');
    assert.ok(FINISH.includes(final.choices[0].finish_reason));
    assert.equal(final.choices[0].message.content ?? '', deltas);
  });

  it('completions.create, stream and not', async () => {
    const res = await client.completions.create({ model: 'tiny', prompt: 'Once upon', max_tokens: 4 });
    assert.equal(res.object, 'text_completion');
    assert.equal(res.choices[0].finish_reason, 'length');
    assert.equal(res.usage?.completion_tokens, 4);
    const stream = await client.completions.create({ model: 'tiny', prompt: 'Once upon', max_tokens: 3, stream: true });
    const reasons = [];
    for await (const c of stream) reasons.push(c.choices[0]?.finish_reason);
    assert.equal(reasons[reasons.length - 1], 'length');
  });

  it('json_schema response_format gives parsable JSON', { skip: grammarSkip }, async () => {
    const res = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'A person as JSON.' }],
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'person',
          schema: {
            type: 'object',
            properties: { ok: { type: 'boolean' }, n: { type: 'integer', minimum: 0, maximum: 9 } },
            required: ['ok', 'n'],
            additionalProperties: false,
          },
        },
      },
      max_tokens: 200,
      seed: 3,
    });
    assert.equal(res.choices[0].finish_reason, 'stop');
    const value = JSON.parse(res.choices[0].message.content ?? '') as { ok: unknown; n: unknown };
    assert.equal(typeof value.ok, 'boolean');
    assert.ok(Number.isInteger(value.n));
  });

  it('embeddings: base64 (the SDK default) and float give the same unit vectors', { skip: embedSkip }, async () => {
    const b64 = await client.embeddings.create({ model: 'bert', input: ['The sky is blue.', 'Grass is green.'] });
    assert.equal(b64.object, 'list');
    assert.equal(b64.data.length, 2);
    assert.deepEqual(
      b64.data.map((d) => d.index),
      [0, 1],
    );
    assert.ok(b64.usage.prompt_tokens > 0);
    const float = await client.embeddings.create({ model: 'bert', input: 'Grass is green.', encoding_format: 'float' });
    assert.ok(Array.isArray(float.data[0].embedding));
    assert.equal(float.data[0].embedding.length, 128);
    assert.ok(Math.abs(norm(float.data[0].embedding) - 1) < 1e-4);
    const decoded = b64.data[1].embedding;
    assert.equal(decoded.length, 128);
    for (let i = 0; i < 128; i++) assert.ok(Math.abs(decoded[i] - float.data[0].embedding[i]) < 1e-5);
    const cut = await client.embeddings.create({ model: 'bert', input: 'x', dimensions: 16, encoding_format: 'float' });
    assert.equal(cut.data[0].embedding.length, 16);
  });

  it('models.list and models.retrieve', async () => {
    const page = await client.models.list();
    const ids = page.data.map((m) => m.id).sort();
    assert.deepEqual(ids, ['bert:latest', 'tiny:latest']);
    for (const m of page.data) {
      assert.equal(m.object, 'model');
      assert.equal(m.owned_by, 'library');
      assert.ok(m.created > 1_600_000_000);
    }
    const one = await client.models.retrieve('tiny:latest');
    assert.equal(one.id, 'tiny:latest');
    assert.equal(one.owned_by, 'library');
  });

  it('an unknown model is a NotFoundError with the OpenAI error shape', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) => {
        assert.ok(err instanceof NotFoundError);
        assert.equal(err.status, 404);
        assert.equal(err.type, 'not_found_error');
        assert.match(err.message, /model 'nope' not found/);
        return true;
      },
    );
    await assert.rejects(client.models.retrieve('nope'), NotFoundError);
    await assert.rejects(client.embeddings.create({ model: 'nope', input: 'x' }), NotFoundError);
  });

  it('bad requests are BadRequestError (400, invalid_request_error)', async () => {
    await assert.rejects(client.chat.completions.create({ model: 'tiny', messages: [] }), (err: unknown) => {
      assert.ok(err instanceof BadRequestError);
      assert.equal(err.type, 'invalid_request_error');
      assert.match(err.message, /\[\] is too short - 'messages'/);
      return true;
    });
    await assert.rejects(
      client.embeddings.create({ model: 'bert', input: [] as string[] }),
      (err: unknown) => err instanceof BadRequestError && /invalid input/.test(err.message),
    );
  });

  it('raw wire: SSE framing, content types, error JSON', async () => {
    const res = await postJson(`${t.baseUrl}/v1/chat/completions`, {
      model: 'tiny',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 2,
      stream: true,
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const text = await res.text();
    const frames = text.split('\n\n').filter((f) => f !== '');
    for (const f of frames) assert.ok(f.startsWith('data: '), f);
    assert.equal(frames[frames.length - 1], 'data: [DONE]');
    const bad = await postJson(`${t.baseUrl}/v1/chat/completions`, {
      model: 'nope',
      messages: [{ role: 'user', content: 'x' }],
    });
    assert.equal(bad.status, 404);
    assert.match(bad.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await bad.json(), {
      error: { message: "model 'nope' not found", type: 'not_found_error', param: null, code: null },
    });
  });
});

describe('OpenAI /v1 without models', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t?.close());

  it('GET /v1/models is {object:"list", data: []} (never null)', async () => {
    const res = await fetch(`${t.baseUrl}/v1/models`, { headers: { authorization: 'Bearer anything' } });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { object: 'list', data: [] });
  });
});
