import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeBinding } from '../utils/fake-binding';
import { headersOnly } from '../utils/headers-only';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

const K1 = 'key-one-0123456789';
const K2 = 'key-two-9876543210';

function bearer(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
}

// Issue 23 items 1 and 2: authorization before the body is read; one principal per key; stored responses owned.
describe('authorization at onRequest, principals, owned responses (FakeBinding, two keys)', () => {
  let t: TestApp;
  const binding = new FakeBinding();

  before(async () => {
    t = await createTestApp({
      binding,
      config: { apiKeys: [K1, K2], managementBodyLimit: 64 * 1024, allowServerPaths: true },
    });
    const path = join(t.modelsDir, 'm.gguf');
    await writeTinyGguf(path, { chatTemplate: '{{ chatml }}' });
    const res = await postJson(
      `${t.baseUrl}/api/create`,
      { model: 'm', modelfile: `FROM ${path}` },
      { headers: bearer(K1) },
    );
    assert.equal(res.status, 200, await res.text());
    binding.script = () => ({ pieces: ['Hello'] });
  });

  after(() => t.close());

  it('an unauthenticated 50 MB body gets its 401 before any byte of it is sent, in each dialect', async () => {
    const size = 50 * 1024 * 1024;
    const ollama = await headersOnly(t.baseUrl, 'POST', '/api/chat', size);
    assert.equal(ollama.status, 401);
    assert.ok(typeof (JSON.parse(ollama.body) as { error: string }).error === 'string');
    const openai = await headersOnly(t.baseUrl, 'POST', '/v1/chat/completions', size, {
      authorization: 'Bearer wrong',
    });
    assert.equal(openai.status, 401);
    assert.equal((JSON.parse(openai.body) as { error: { code: string } }).error.code, 'invalid_api_key');
    const anthropic = await headersOnly(t.baseUrl, 'POST', '/v1/messages', size, { 'x-api-key': 'wrong' });
    assert.equal(anthropic.status, 401);
    assert.equal((JSON.parse(anthropic.body) as { error: { type: string } }).error.type, 'authentication_error');
  });

  it('the audio upload routes decide before the body: 401 without a key, 413 for an oversized Content-Length', async () => {
    const multipart = { 'content-type': 'multipart/form-data; boundary=x' };
    for (const path of ['/v1/audio/transcriptions', '/v1/audio/translations']) {
      const refused = await headersOnly(t.baseUrl, 'POST', path, 20 * 1024 * 1024, {
        ...multipart,
        authorization: 'Bearer wrong',
      });
      assert.equal(refused.status, 401, path);
      assert.equal((JSON.parse(refused.body) as { error: { code: string } }).error.code, 'invalid_api_key');
      const tooLarge = await headersOnly(t.baseUrl, 'POST', path, 30 * 1024 * 1024, { ...bearer(K1), ...multipart });
      assert.equal(tooLarge.status, 413, path);
    }
  });

  it('public routes stay public; a valid key passes', async () => {
    for (const path of ['/', '/api/version', '/health']) {
      assert.equal((await fetch(`${t.baseUrl}${path}`)).status, 200, path);
    }
    assert.equal((await fetch(`${t.baseUrl}/api/tags`)).status, 401);
    assert.equal((await fetch(`${t.baseUrl}/api/tags`, { headers: bearer(K2) })).status, 200);
  });

  it('management routes have their own, smaller body limit (413 in the dialect); others keep the large one', async () => {
    const pad = 'x'.repeat(100 * 1024);
    const create = await postJson(
      `${t.baseUrl}/api/create`,
      { model: 'big', from: 'm', system: pad },
      { headers: bearer(K1) },
    );
    assert.equal(create.status, 413);
    assert.ok(typeof ((await create.json()) as { error: string }).error === 'string');
    const declared = await headersOnly(t.baseUrl, 'POST', '/api/copy', 1024 * 1024, bearer(K1));
    assert.equal(declared.status, 413, 'refused on Content-Length, before the body');
    const chat = await postJson(
      `${t.baseUrl}/api/chat`,
      { model: 'm', stream: false, messages: [{ role: 'user', content: 'hi' }], padding: pad },
      { headers: bearer(K1) },
    );
    assert.equal(chat.status, 200, await chat.text());
  });

  it('two keys cannot see, continue or delete each other’s responses (404 in OpenAI’s shape)', async () => {
    const created = await postJson(`${t.baseUrl}/v1/responses`, { model: 'm', input: 'hi' }, { headers: bearer(K1) });
    assert.equal(created.status, 200, await created.clone().text());
    const id = ((await created.json()) as { id: string }).id;

    const get2 = await fetch(`${t.baseUrl}/v1/responses/${id}`, { headers: bearer(K2) });
    assert.equal(get2.status, 404);
    const error = ((await get2.json()) as { error: { type: string; message: string } }).error;
    assert.equal(error.message, `Response with id '${id}' not found.`, 'the same answer as for an unknown id');
    const cont2 = await postJson(
      `${t.baseUrl}/v1/responses`,
      { model: 'm', input: 'more', previous_response_id: id },
      { headers: bearer(K2) },
    );
    assert.equal(cont2.status, 404);
    assert.equal(((await cont2.json()) as { error: { param: string } }).error.param, 'previous_response_id');
    const del2 = await fetch(`${t.baseUrl}/v1/responses/${id}`, { method: 'DELETE', headers: bearer(K2) });
    assert.equal(del2.status, 404);

    const get1 = await fetch(`${t.baseUrl}/v1/responses/${id}`, { headers: bearer(K1) });
    assert.equal(get1.status, 200, 'still there for its owner');
    const cont1 = await postJson(
      `${t.baseUrl}/v1/responses`,
      { model: 'm', input: 'more', previous_response_id: id },
      { headers: bearer(K1) },
    );
    assert.equal(cont1.status, 200);
    const del1 = await fetch(`${t.baseUrl}/v1/responses/${id}`, { method: 'DELETE', headers: bearer(K1) });
    assert.equal(del1.status, 200);
  });
});

describe('request log lines name the principal, never a response id or a key (FakeBinding)', () => {
  it('logs `principal` and the route pattern of /v1/responses/{id}', async () => {
    const lines: string[] = [];
    const binding = new FakeBinding();
    const t = await createTestApp({
      binding,
      config: { apiKeys: [K1] },
      logDestination: { write: (line: string) => void lines.push(line) },
    });
    try {
      const id = 'resp_0123456789abcdef';
      await fetch(`${t.baseUrl}/v1/responses/${id}`, { headers: bearer(K1) });
      const text = lines.join('');
      assert.doesNotMatch(text, new RegExp(id));
      assert.doesNotMatch(text, new RegExp(K1));
      assert.match(text, /"principal":"key:[0-9a-f]{12}"/);
      assert.match(text, /\/v1\/responses\/:id/);
    } finally {
      await t.close();
    }
  });
});
