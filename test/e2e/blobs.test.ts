import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BODY_LIMIT_BYTES } from '../../src/app.factory';
import { FakeBinding } from '../utils/fake-binding';
import { ensureTestModels, TINY_LLAMA_SPM } from '../utils/models';
import { postJson, readNdjson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

const sha = (data: Buffer) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

// HEAD/POST /api/blobs/:digest over raw HTTP (reference/ollama-api.md §3.10) and create from uploaded `files`.
describe('blob uploads', () => {
  let t: TestApp;
  let blobsDir: string;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: new FakeBinding() });
    blobsDir = join(t.modelsDir, 'blobs');
  });

  after(() => t.close());

  const upload = (digest: string, body: Buffer, contentType = 'application/octet-stream') =>
    fetch(`${t.baseUrl}/api/blobs/${digest}`, { method: 'POST', body, headers: { 'content-type': contentType } });
  const head = (digest: string) => fetch(`${t.baseUrl}/api/blobs/${digest}`, { method: 'HEAD' });

  it('answers 400 `invalid digest format` for a malformed digest on HEAD and POST', async () => {
    for (const bad of ['nope', `sha256:${'0'.repeat(63)}`, `sha512:${'0'.repeat(64)}`]) {
      const res = await upload(bad, Buffer.from('x'));
      assert.equal(res.status, 400);
      assert.deepEqual(await res.json(), { error: 'invalid digest format' });
      assert.equal((await head(bad)).status, 400);
    }
  });

  it('uploads a blob: HEAD 404 → POST 201 → HEAD 200 → POST again 200; the JSON-looking body is not parsed', async () => {
    const body = Buffer.from('{"this": "is not parsed"}');
    const digest = sha(body);
    assert.equal((await head(digest)).status, 404);
    const first = await upload(digest, body, 'application/json');
    assert.equal(first.status, 201);
    assert.equal(await first.text(), '');
    assert.equal((await head(digest)).status, 200);
    assert.equal((await head(digest.replace(':', '-').toUpperCase().replace('SHA256', 'sha256'))).status, 200);
    assert.equal((await upload(digest, body)).status, 200);
    assert.deepEqual(await readFile(join(blobsDir, digest.replace(':', '-'))), body);
  });

  it('rejects a digest mismatch with 400 and leaves no file behind', async () => {
    const before = (await readdir(blobsDir).catch(() => [])).sort();
    const body = Buffer.from('actual bytes');
    const wrong = `sha256:${'ab'.repeat(32)}`;
    const res = await upload(wrong, body);
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: `digest mismatch, expected "${wrong}", got "${sha(body)}"` });
    assert.deepEqual((await readdir(blobsDir)).sort(), before);
    assert.equal((await head(wrong)).status, 404);
  });

  it('streams bodies larger than the JSON body limit', async () => {
    const body = Buffer.alloc(BODY_LIMIT_BYTES + 1024 * 1024, 7);
    const res = await upload(sha(body), body);
    assert.equal(res.status, 201);
    assert.equal((await head(sha(body))).status, 200);
  });

  it('creates a model from an uploaded GGUF (`files`), rejects missing and non-GGUF blobs', async () => {
    const gguf = await readFile(TINY_LLAMA_SPM);
    const digest = sha(gguf);
    assert.equal((await upload(digest, gguf)).status, 201);
    const res = await postJson(`${t.baseUrl}/api/create`, { model: 'uploaded', files: { 'tiny.gguf': digest } });
    assert.equal(res.status, 200);
    const records = await readNdjson(res);
    assert.deepEqual(records.at(-1), { status: 'success', done: true });
    const show = await postJson(`${t.baseUrl}/api/show`, { model: 'uploaded' });
    assert.equal(show.status, 200);
    assert.equal(
      ((await show.json()) as { details: { quantization_level: string } }).details.quantization_level,
      'F16',
    );

    const missing = `sha256:${'1'.repeat(64)}`;
    const r404 = await postJson(`${t.baseUrl}/api/create`, { model: 'x', files: { 'a.gguf': missing } });
    assert.equal(r404.status, 400);
    assert.deepEqual(await r404.json(), { error: `blob "${missing}" not found` });

    const text = Buffer.from('not a gguf at all');
    await upload(sha(text), text);
    const bad = await postJson(`${t.baseUrl}/api/create`, { model: 'x', files: { 'a.gguf': sha(text) } });
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), { error: 'supplied file was not in GGUF format' });

    const neither = await postJson(`${t.baseUrl}/api/create`, { model: 'x' });
    assert.equal(neither.status, 400);
    assert.deepEqual(await neither.json(), { error: "neither 'from' or 'files' was specified" });

    const badTemplate = await postJson(`${t.baseUrl}/api/create`, {
      model: 'x',
      from: 'uploaded',
      template: '{{ .Prompt',
    });
    assert.equal(badTemplate.status, 400);
    assert.match(((await badTemplate.json()) as { error: string }).error, /^template error: /);
  });

  it('creates from a Modelfile FROM @sha256 reference and stores ADAPTER as an adapter layer', async () => {
    const gguf = await readFile(TINY_LLAMA_SPM);
    const digest = sha(gguf);
    // The tiny model's own GGUF stands in for a LoRA adapter: this checks the layer plumbing, not LoRA loading.
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: 'with-adapter',
      modelfile: `FROM @${digest}\nADAPTER @${digest}\nLICENSE one\nLICENSE """two\nlines"""`,
      stream: false,
    });
    assert.equal(res.status, 200);
    const show = (await (await postJson(`${t.baseUrl}/api/show`, { model: 'with-adapter' })).json()) as {
      modelfile: string;
      license: string;
    };
    assert.match(show.modelfile, /^ADAPTER .*sha256-/m);
    assert.match(show.license, /one/);
    const two = await postJson(`${t.baseUrl}/api/create`, {
      model: 'x',
      modelfile: `FROM @${digest}\nADAPTER @${digest}\nADAPTER @${digest}`,
    });
    assert.equal(two.status, 400);
    assert.deepEqual(await two.json(), { error: 'only one adapter is currently supported' });
  });
});
