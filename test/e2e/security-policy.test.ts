import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeBinding } from '../utils/fake-binding';
import { headersOnly } from '../utils/headers-only';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

const ADMIN = 'sk-admin-0123456789';
const USER = 'sk-user-9876543210';

/** The keys file: an admin without a policy beyond its name, a user limited to `llama3*` and `demo`. */
const KEYS_YAML = `# tenants (issue 33)
keys:
  - key: ${ADMIN}
    name: ops
    role: admin
  - key: ${USER}
    name: team-a
    role: user
    models: ["llama3*", demo]
    limits:
      max_output_tokens: 2
`;

function auth(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
}

/** One request by model name in each dialect, with `model` in it. */
const BY_NAME: Array<{ method: string; path: string; body?: (model: string) => unknown }> = [
  { method: 'POST', path: '/api/show', body: (model) => ({ model }) },
  { method: 'POST', path: '/api/chat', body: (model) => ({ model, messages: [{ role: 'user', content: 'hi' }] }) },
  { method: 'POST', path: '/api/generate', body: (model) => ({ model, prompt: 'hi' }) },
  { method: 'POST', path: '/api/embed', body: (model) => ({ model, input: 'hi' }) },
  { method: 'POST', path: '/api/embeddings', body: (model) => ({ model, prompt: 'hi' }) },
  {
    method: 'POST',
    path: '/v1/chat/completions',
    body: (model) => ({ model, messages: [{ role: 'user', content: 'hi' }] }),
  },
  { method: 'POST', path: '/v1/completions', body: (model) => ({ model, prompt: 'hi' }) },
  { method: 'POST', path: '/v1/embeddings', body: (model) => ({ model, input: 'hi' }) },
  { method: 'POST', path: '/v1/responses', body: (model) => ({ model, input: 'hi' }) },
  {
    method: 'POST',
    path: '/v1/messages',
    body: (model) => ({ model, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
  },
  {
    method: 'POST',
    path: '/v1/messages/count_tokens',
    body: (model) => ({ model, messages: [{ role: 'user', content: 'hi' }] }),
  },
];

// Issue 33 items 1 and 6: roles and model lists of the keys file, over real HTTP in every dialect.
describe('tenant policies from the keys file: roles and model lists (FakeBinding)', () => {
  let t: TestApp;
  let dir: string;
  let keysFile: string;
  const binding = new FakeBinding();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'llamad-policy-'));
    keysFile = join(dir, 'keys.yaml');
    await writeFile(keysFile, KEYS_YAML);
    t = await createTestApp({
      binding,
      config: { apiKeysFile: keysFile, managementBodyLimit: 64 * 1024, allowServerPaths: true },
    });
    const gguf = join(t.modelsDir, 'm.gguf');
    await writeTinyGguf(gguf, { chatTemplate: '{{ chatml }}' });
    // `secret` has weights of its own (a loaded runner is named by the models that share its weights).
    const other = join(t.modelsDir, 'other.gguf');
    await writeTinyGguf(other, { chatTemplate: '{{ chatml }}', contextLength: 1024 });
    for (const model of ['demo', 'llama3.2:1b', 'secret']) {
      const res = await postJson(
        `${t.baseUrl}/api/create`,
        { model, from: model === 'secret' ? other : gguf, stream: false },
        {
          headers: auth(ADMIN),
        },
      );
      assert.equal(res.status, 200, await res.text());
    }
    binding.script = () => ({ pieces: ['a', 'b', 'c', 'd'] });
  });

  after(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a user key cannot create, delete, pull, push, copy, upload a blob or scrape metrics: 403 before any body is read', async () => {
    const digest = `sha256:${'0'.repeat(64)}`;
    const routes: Array<[string, string, number]> = [
      ['POST', '/api/create', 1000],
      ['DELETE', '/api/delete', 1000],
      ['POST', '/api/pull', 1000],
      ['POST', '/api/push', 1000],
      ['POST', '/api/copy', 1000],
      ['POST', `/api/blobs/${digest}`, 50 * 1024 * 1024],
    ];
    for (const [method, path, declared] of routes) {
      const answer = await headersOnly(t.baseUrl, method, path, declared, auth(USER));
      assert.equal(answer.status, 403, `${method} ${path}: ${answer.body}`);
      assert.match((JSON.parse(answer.body) as { error: string }).error, /^forbidden/);
    }
    const metrics = await fetch(`${t.baseUrl}/metrics`, { headers: auth(USER) });
    assert.equal(metrics.status, 403, 'metrics name every model and tenant');
    assert.equal((await fetch(`${t.baseUrl}/metrics`, { headers: auth(ADMIN) })).status, 200);
    // The same routes with an admin key get past the role check (and read the body).
    const copy = await postJson(
      `${t.baseUrl}/api/copy`,
      { source: 'demo', destination: 'demo-copy' },
      {
        headers: auth(ADMIN),
      },
    );
    assert.equal(copy.status, 200, await copy.text());
    const del = await fetch(`${t.baseUrl}/api/delete`, {
      method: 'DELETE',
      headers: auth(ADMIN),
      body: JSON.stringify({ model: 'demo-copy' }),
    });
    assert.equal(del.status, 200);
  });

  it('lists show a user only the models of its list; an admin sees every model', async () => {
    const tags = async (key: string) =>
      (
        (await (await fetch(`${t.baseUrl}/api/tags`, { headers: auth(key) })).json()) as { models: { name: string }[] }
      ).models
        .map((m) => m.name)
        .sort();
    assert.deepEqual(await tags(USER), ['demo:latest', 'llama3.2:1b']);
    assert.deepEqual(await tags(ADMIN), ['demo:latest', 'llama3.2:1b', 'secret:latest']);
    const v1 = async (key: string) =>
      (
        (await (await fetch(`${t.baseUrl}/v1/models`, { headers: auth(key) })).json()) as { data: { id: string }[] }
      ).data
        .map((m) => m.id)
        .sort();
    assert.deepEqual(await v1(USER), ['demo:latest', 'llama3.2:1b']);
    assert.deepEqual(await v1(ADMIN), ['demo:latest', 'llama3.2:1b', 'secret:latest']);
  });

  it('a model outside the list answers each dialect’s "model not found", exactly as a model that does not exist', async () => {
    const send = async (route: (typeof BY_NAME)[number], model: string, key: string) => {
      const res = await fetch(`${t.baseUrl}${route.path}`, {
        method: route.method,
        headers: auth(key),
        body: JSON.stringify(route.body!(model)),
      });
      // Anthropic's errors carry the request's own id; the rest must be the same.
      return {
        status: res.status,
        body: (await res.text()).replace(/"request_id":"req_[0-9a-f]+"/, '"request_id":"…"'),
      };
    };
    for (const route of BY_NAME) {
      const hidden = await send(route, 'secret', USER);
      const missing = await send(route, 'nothing-here', USER);
      assert.equal(hidden.status, 404, `${route.path}: ${hidden.body}`);
      assert.equal(hidden.status, missing.status, route.path);
      assert.equal(hidden.body, missing.body.replaceAll('nothing-here', 'secret'), route.path);
      const allowed = await send(route, 'demo', USER);
      assert.notEqual(allowed.status, 404, `${route.path} with a listed model: ${allowed.body}`);
      const admin = await send(route, 'secret', ADMIN);
      assert.notEqual(admin.status, 404, `${route.path} as admin: ${admin.body}`);
    }
    const retrieve = async (model: string, key: string) => {
      const res = await fetch(`${t.baseUrl}/v1/models/${model}`, { headers: auth(key) });
      return { status: res.status, body: await res.text() };
    };
    const hidden = await retrieve('secret', USER);
    assert.equal(hidden.status, 404);
    assert.equal(hidden.body, (await retrieve('nothing-here', USER)).body.replaceAll('nothing-here', 'secret'));
    assert.equal((await retrieve('llama3.2:1b', USER)).status, 200, 'a glob of the list');
    assert.equal((await retrieve('secret', ADMIN)).status, 200);
  });

  it('/api/ps and llama-server’s /tokenize count only the loaded models of a user’s list', async () => {
    // Only `secret` loaded: unload the shared weights of the others first.
    const unload = await postJson(
      `${t.baseUrl}/api/generate`,
      { model: 'demo', keep_alive: 0 },
      { headers: auth(ADMIN) },
    );
    assert.equal(unload.status, 200, await unload.text());
    const chat = await postJson(
      `${t.baseUrl}/api/chat`,
      { model: 'secret', stream: false, messages: [{ role: 'user', content: 'hi' }] },
      { headers: auth(ADMIN) },
    );
    assert.equal(chat.status, 200, await chat.text());
    const ps = async (key: string) =>
      (
        (await (await fetch(`${t.baseUrl}/api/ps`, { headers: auth(key) })).json()) as { models: { name: string }[] }
      ).models.map((m) => m.name);
    assert.deepEqual(await ps(ADMIN), ['secret:latest']);
    assert.deepEqual(await ps(USER), []);
    const tokenize = (key: string) => postJson(`${t.baseUrl}/tokenize`, { content: 'hi' }, { headers: auth(key) });
    assert.equal((await tokenize(ADMIN)).status, 200);
    const hidden = await tokenize(USER);
    assert.equal(hidden.status, 400);
    assert.match(((await hidden.json()) as { error: string }).error, /^no model is loaded/);
  });

  it('max_output_tokens caps a user’s reply whatever it asks for', async () => {
    const res = await postJson(
      `${t.baseUrl}/v1/chat/completions`,
      { model: 'demo', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] },
      { headers: auth(USER) },
    );
    const body = (await res.json()) as { usage: { completion_tokens: number }; choices: { finish_reason: string }[] };
    assert.equal(body.usage.completion_tokens, 2);
    assert.equal(body.choices[0].finish_reason, 'length');
  });

  it('a keys file with a syntax error keeps the previous policy (the user stays limited, both keys still work)', async () => {
    await writeFile(keysFile, `${KEYS_YAML}  - key: [broken\n`);
    const tags = await fetch(`${t.baseUrl}/api/tags`, { headers: auth(USER) });
    assert.equal(tags.status, 200);
    const names = ((await tags.json()) as { models: { name: string }[] }).models.map((m) => m.name);
    assert.ok(!names.includes('secret:latest'));
    assert.equal((await fetch(`${t.baseUrl}/api/tags`, { headers: auth(ADMIN) })).status, 200);
    await writeFile(keysFile, KEYS_YAML);
  });
});
