import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeBinding } from '../utils/fake-binding';
import { ensureTestModels, TINY_LLAMA_SPM } from '../utils/models';
import { postJson, readNdjson } from '../utils/ndjson';
import { registryAuthMissing, RegistryServer, startRegistry } from '../utils/registry-server';
import { createTestApp, TestApp } from '../utils/test-app';

/** Why these tests cannot run here (a program missing), for each test's `skip`; undefined when they can. */
const skip = registryAuthMissing();

// Push/pull against docker-registry with htpasswd (bcrypt) Basic auth; credentials from OLLAMA_REGISTRY_AUTH. Needs
// both programs (installed by .ci/run); skipped with the install command where either is missing.
describe('registry auth (htpasswd Basic) against docker-registry', () => {
  let t: TestApp;
  let registry: RegistryServer;
  let name: string;
  const saved = process.env.OLLAMA_REGISTRY_AUTH;

  before(async () => {
    if (skip) return;
    ensureTestModels();
    registry = await startRegistry({ basicAuth: { username: 'tester', password: 's3cret' } });
    t = await createTestApp({ binding: new FakeBinding() });
    name = `${registry.host}/test/auth:latest`;
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: name,
      modelfile: `FROM ${TINY_LLAMA_SPM}`,
      stream: false,
    });
    assert.equal(res.status, 200);
  });
  after(async () => {
    if (saved === undefined) delete process.env.OLLAMA_REGISTRY_AUTH;
    else process.env.OLLAMA_REGISTRY_AUTH = saved;
    await t?.close();
    await registry?.stop();
  });

  it('without credentials: unauthorized: access denied', { skip }, async () => {
    process.env.OLLAMA_REGISTRY_AUTH = '{}';
    const records = await readNdjson<{ error?: string }>(
      await postJson(`${t.baseUrl}/api/push`, { model: name, insecure: true }),
    );
    assert.deepEqual(records.at(-1), { error: 'unauthorized: access denied' });
  });

  it('with credentials: push, delete, pull back', { skip }, async () => {
    process.env.OLLAMA_REGISTRY_AUTH = JSON.stringify({ [registry.host]: { username: 'tester', password: 's3cret' } });
    const push = await postJson(`${t.baseUrl}/api/push`, { model: name, insecure: true, stream: false });
    assert.deepEqual(await push.json(), { status: 'success' });
    const del = await fetch(`${t.baseUrl}/api/delete`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: name }),
    });
    assert.equal(del.status, 200);
    const pull = await postJson(`${t.baseUrl}/api/pull`, { model: name, insecure: true, stream: false });
    assert.deepEqual(await pull.json(), { status: 'success' });
  });
});
