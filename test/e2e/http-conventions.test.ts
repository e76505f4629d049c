import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeBinding } from '../utils/fake-binding';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

// Exact wire behaviour of the HTTP edge (reference/ollama-api.md §1.1, §3.1, §5.2) over raw fetch; the daemon must
// keep serving after every error.
describe('HTTP conventions (raw HTTP)', () => {
  let t: TestApp;

  before(async () => {
    t = await createTestApp({ binding: new FakeBinding() });
  });

  after(() => t.close());

  async function stillServes(): Promise<void> {
    const res = await fetch(`${t.baseUrl}/`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'Ollama is running');
  }

  async function expectError(res: Response, status: number, error: string): Promise<void> {
    assert.equal(res.status, status);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await res.json(), { error });
    await stillServes();
  }

  it('GET and HEAD / answer "Ollama is running"', async () => {
    const res = await fetch(`${t.baseUrl}/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    assert.equal(await res.text(), 'Ollama is running');
    const head = await fetch(`${t.baseUrl}/`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), '');
  });

  it('GET and HEAD /api/version', async () => {
    const res = await fetch(`${t.baseUrl}/api/version`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { version: string };
    assert.match(body.version, /^\d+\.\d+\.\d+$/);
    assert.equal((await fetch(`${t.baseUrl}/api/version`, { method: 'HEAD' })).status, 200);
  });

  it('GET /api/tags on an empty store is {"models":[]}', async () => {
    const res = await fetch(`${t.baseUrl}/api/tags`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), '{"models":[]}');
    assert.equal((await fetch(`${t.baseUrl}/api/tags`, { method: 'HEAD' })).status, 200);
  });

  it('unknown routes are 404 and wrong methods 405, as gin answers', async () => {
    const missing = await fetch(`${t.baseUrl}/api/nothing`);
    assert.equal(missing.status, 404);
    assert.equal(await missing.text(), '404 page not found');
    const wrong = await fetch(`${t.baseUrl}/api/show`);
    assert.equal(wrong.status, 405);
    assert.equal(await wrong.text(), '405 method not allowed');
    await stillServes();
  });

  for (const route of ['generate', 'chat', 'show', 'create']) {
    it(`POST /api/${route} with an empty body → 400 missing request body`, async () => {
      await expectError(await fetch(`${t.baseUrl}/api/${route}`, { method: 'POST' }), 400, 'missing request body');
      await expectError(
        await fetch(`${t.baseUrl}/api/${route}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '',
        }),
        400,
        'missing request body',
      );
    });
  }

  it('malformed JSON → 400 with a parse message', async () => {
    const res = await postJson(`${t.baseUrl}/api/generate`, '{"model": "x", ');
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: 'unexpected EOF' });
    const bad = await postJson(`${t.baseUrl}/api/chat`, 'xyz');
    assert.deepEqual(await bad.json(), { error: "invalid character 'x' looking for beginning of value" });
    await stillServes();
  });

  it('parses JSON whatever the content type (curl -d sends form encoding)', async () => {
    const res = await fetch(`${t.baseUrl}/api/show`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: '{"model":"nope"}',
    });
    await expectError(res, 404, "model 'nope:latest' not found");
  });

  it('a field of the wrong type → 400 with Go’s message', async () => {
    await expectError(
      await postJson(`${t.baseUrl}/api/generate`, { model: 'x', prompt: 1 }),
      400,
      'json: cannot unmarshal number into Go struct field GenerateRequest.prompt of type string',
    );
    await expectError(
      await postJson(`${t.baseUrl}/api/chat`, [1, 2]),
      400,
      'json: cannot unmarshal array into Go value of type api.ChatRequest',
    );
  });

  it('a missing model is 404 on generate but 400 on chat and show', async () => {
    await expectError(await postJson(`${t.baseUrl}/api/generate`, { prompt: 'hi' }), 404, "model '' not found");
    await expectError(await postJson(`${t.baseUrl}/api/chat`, { messages: [] }), 400, 'model is required');
    await expectError(await postJson(`${t.baseUrl}/api/show`, {}), 400, 'model is required');
  });

  it('an unknown model is 404 with the name as sent', async () => {
    await expectError(
      await postJson(`${t.baseUrl}/api/generate`, { model: 'ghost', prompt: 'hi' }),
      404,
      "model 'ghost' not found",
    );
    await expectError(
      await postJson(`${t.baseUrl}/api/chat`, { model: 'ghost:7b', messages: [{ role: 'user', content: 'hi' }] }),
      404,
      "model 'ghost:7b' not found",
    );
    await expectError(
      await postJson(`${t.baseUrl}/api/show`, { model: 'Ghost' }),
      404,
      "model 'Ghost:latest' not found",
    );
  });

  it('invalid keep_alive and options are 400', async () => {
    await expectError(
      await postJson(`${t.baseUrl}/api/generate`, { model: 'x', prompt: 'hi', keep_alive: '300' }),
      400,
      'time: missing unit in duration "300"',
    );
    await expectError(
      await postJson(`${t.baseUrl}/api/chat`, { model: 'x', messages: [], keep_alive: true }),
      400,
      "Unsupported type: 'bool'",
    );
    await expectError(
      await postJson(`${t.baseUrl}/api/generate`, { model: 'x', prompt: 'hi', options: { num_ctx: 'lots' } }),
      400,
      'option "num_ctx" must be of type integer',
    );
  });

  it('create with a bad FROM → 400', async () => {
    await expectError(
      await postJson(`${t.baseUrl}/api/create`, { model: 'x', modelfile: 'FROM /definitely/not/here.gguf' }),
      400,
      'FROM file "/definitely/not/here.gguf" does not exist',
    );
    await expectError(
      await postJson(`${t.baseUrl}/api/create`, { model: 'x', modelfile: `FROM ${__filename}` }),
      400,
      'supplied file was not in GGUF format',
    );
    await expectError(
      await postJson(`${t.baseUrl}/api/create`, { model: 'x', modelfile: 'FROM a\nWHAT now' }),
      400,
      '(line 2): command must be one of "from", "license", "template", "system", "adapter", "draft", "renderer", "parser", "parameter", "message", or "requires"',
    );
    await expectError(
      await postJson(`${t.baseUrl}/api/create`, { model: 'bad name', modelfile: 'FROM a' }),
      400,
      'invalid model name',
    );
  });
});
