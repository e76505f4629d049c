import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SERVER_PATH_REFUSED_MESSAGE } from '../../src/models/models.service';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { createTestApp, TestApp } from '../utils/test-app';

/** A documentation address (RFC 5737 TEST-NET-1): a client that is not on this machine. */
const REMOTE = '192.0.2.10';

// Modelfile FROM / ADAPTER server paths are honoured for loopback clients only (reference/ollama-api.md §3.9;
// Ollama's CVE-2024-39719 answered remote clients differently for existing and missing paths). Requests go through
// app.inject so that the connection's remote address can be set.
describe('create: FROM/ADAPTER server paths only for loopback clients', () => {
  let t: TestApp;
  let files: string;
  let gguf: string;
  let lora: string;

  /** POST /api/create (stream: false) from `remoteAddress`. */
  const create = (remoteAddress: string, payload: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url: '/api/create', remoteAddress, payload: { stream: false, ...payload } });

  before(async () => {
    t = await createTestApp({ binding: new FakeBinding() });
    files = await mkdtemp(join(tmpdir(), 'llamad-paths-'));
    gguf = join(files, 'model.gguf');
    lora = join(files, 'lora.gguf');
    await writeTinyGguf(gguf, { chatTemplate: '{{ chatml }}' });
    await writeTinyGguf(lora, { architecture: 'llama' }); // a GGUF-shaped stand-in for a LoRA adapter
  });

  after(async () => {
    await t?.close();
    await rm(files, { recursive: true, force: true });
  });

  it('loopback: FROM an existing GGUF and ADAPTER an existing file still work (v4, v6, v4-mapped)', async () => {
    const res = await create('127.0.0.1', { model: 'local', modelfile: `FROM ${gguf}` });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { status: 'success', done: true });
    const withAdapter = await create('::1', { model: 'local-lora', modelfile: `FROM local\nADAPTER ${lora}` });
    assert.equal(withAdapter.statusCode, 200, withAdapter.body);
    const mapped = await create('::ffff:127.0.0.2', { model: 'local-json', from: gguf });
    assert.equal(mapped.statusCode, 200, mapped.body);
  });

  it('non-loopback: FROM an existing and a missing server file get the same fixed 400', async () => {
    const existing = await create(REMOTE, { model: 'r1', modelfile: `FROM ${gguf}` });
    const missing = await create(REMOTE, { model: 'r1', modelfile: `FROM ${join(files, 'missing', 'file.gguf')}` });
    assert.equal(existing.statusCode, 400);
    assert.equal(missing.statusCode, 400);
    assert.equal(existing.body, missing.body);
    assert.deepEqual(existing.json(), { error: SERVER_PATH_REFUSED_MESSAGE });
    assert.match(SERVER_PATH_REFUSED_MESSAGE, /POST \/api\/blobs\/sha256:/);
    // Other spellings of a server path, in both request forms.
    for (const from of ['./model.gguf', '~/model.gguf', '../x', 'model.gguf', 'C:\\models\\m.gguf', files]) {
      for (const payload of [{ modelfile: `FROM ${from}` }, { from }]) {
        const res = await create(REMOTE, { model: 'r2', ...payload });
        assert.equal(res.statusCode, 400, `${from}: ${res.body}`);
        assert.equal(res.body, existing.body, from);
      }
    }
  });

  it('non-loopback: ADAPTER an existing and a missing server file get the same fixed 400', async () => {
    const existing = await create(REMOTE, { model: 'r3', modelfile: `FROM local\nADAPTER ${lora}` });
    const missing = await create(REMOTE, { model: 'r3', modelfile: `FROM local\nADAPTER /missing/lora.gguf` });
    const relative = await create(REMOTE, { model: 'r3', modelfile: `FROM local\nADAPTER lora.gguf` });
    for (const res of [existing, missing, relative]) {
      assert.equal(res.statusCode, 400);
      assert.deepEqual(res.json(), { error: SERVER_PATH_REFUSED_MESSAGE });
    }
  });

  it('FROM a model name works for loopback and non-loopback clients', async () => {
    for (const [address, model] of [
      ['127.0.0.1', 'by-name-local'],
      [REMOTE, 'by-name-remote'],
    ]) {
      const res = await create(address, { model, modelfile: 'FROM local\nSYSTEM named' });
      assert.equal(res.statusCode, 200, res.body);
      const json = await create(address, { model: `${model}-json`, from: 'local' });
      assert.equal(json.statusCode, 200, json.body);
    }
    // A name that is not in the store is a 404, never a file lookup.
    const unknown = await create(REMOTE, { model: 'x', modelfile: 'FROM no-such-model' });
    assert.equal(unknown.statusCode, 404);
    assert.deepEqual(unknown.json(), { error: "model 'no-such-model:latest' not found" });
  });

  it('non-loopback: uploaded blobs work (POST /api/blobs, FROM @sha256:…, ADAPTER @sha256:…, files)', async () => {
    const upload = async (path: string) => {
      const bytes = await readFile(path);
      const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
      const res = await t.app.inject({
        method: 'POST',
        url: `/api/blobs/${digest}`,
        remoteAddress: REMOTE,
        headers: { 'content-type': 'application/octet-stream' },
        payload: bytes,
      });
      assert.ok([200, 201].includes(res.statusCode), res.body);
      return digest;
    };
    const model = await upload(gguf);
    const adapter = await upload(lora);
    const viaModelfile = await create(REMOTE, { model: 'up1', modelfile: `FROM @${model}\nADAPTER @${adapter}` });
    assert.equal(viaModelfile.statusCode, 200, viaModelfile.body);
    const viaJson = await create(REMOTE, {
      model: 'up2',
      files: { 'model.gguf': model },
      adapters: { 'lora.gguf': adapter },
    });
    assert.equal(viaJson.statusCode, 200, viaJson.body);
  });

  it('error texts name what the client sent, never the store path', async () => {
    const missing = await create('127.0.0.1', { model: 'x', modelfile: 'FROM ./no/such/file.gguf' });
    assert.equal(missing.statusCode, 400);
    assert.deepEqual(missing.json(), { error: 'FROM file "./no/such/file.gguf" does not exist' });
    const notFound = await create(REMOTE, { model: 'x', modelfile: `FROM @sha256:${'1'.repeat(64)}` });
    assert.equal(notFound.statusCode, 400);
    assert.ok(!notFound.body.includes(t.modelsDir));
  });
});
