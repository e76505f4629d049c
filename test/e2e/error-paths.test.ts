import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson, readNdjson } from '../utils/ndjson';
import { freePort } from '../utils/registry-server';
import { createTestApp, TestApp } from '../utils/test-app';

// Issue 11 item 4: error bodies never carry server paths, and pull/push errors say what failed.
describe('error bodies: what failed, never where on the server', () => {
  let t: TestApp;
  let files: string;

  before(async () => {
    t = await createTestApp({ binding: new FakeBinding() });
    files = await mkdtemp(join(tmpdir(), 'llamad-errpaths-'));
  });
  after(async () => {
    await t?.close();
    await rm(files, { recursive: true, force: true });
  });

  it('pull from a registry port nothing listens on: connection refused, naming the host', async () => {
    const port = await freePort();
    for (const model of [`127.0.0.1:${port}/library/x`, `http://127.0.0.1:${port}/library/x`]) {
      const records = await readNdjson<{ status?: string; error?: string }>(
        await postJson(`${t.baseUrl}/api/pull`, { model, insecure: true }),
      );
      assert.deepEqual(records[0], { status: 'pulling manifest', done: false });
      assert.deepEqual(records.at(-1), {
        error:
          `pull model manifest: Get "http://127.0.0.1:${port}/v2/library/x/manifests/latest": ` +
          `dial tcp 127.0.0.1:${port}: connect: connection refused`,
      });
    }
    // Non-streamed: the same text with the registry-error status.
    const res = await postJson(`${t.baseUrl}/api/pull`, {
      model: `127.0.0.1:${port}/library/x`,
      insecure: true,
      stream: false,
    });
    assert.equal(res.status, 502);
    const body = (await res.json()) as { error: string };
    assert.match(body.error, new RegExp(`127\\.0\\.0\\.1:${port}: connect: connection refused$`));
    assert.doesNotMatch(body.error, /fetch failed/);
  });

  it('push to a registry port nothing listens on: connection refused, naming the host', async () => {
    const port = await freePort();
    const gguf = join(files, 'push.gguf');
    await writeTinyGguf(gguf);
    const name = `127.0.0.1:${port}/ns/pushme:latest`;
    const created = await postJson(`${t.baseUrl}/api/create`, { model: name, from: gguf, stream: false });
    assert.equal(created.status, 200, await created.clone().text());
    const records = await readNdjson<{ status?: string; error?: string }>(
      await postJson(`${t.baseUrl}/api/push`, { model: name, insecure: true }),
    );
    const error = records.at(-1)?.error ?? '';
    assert.match(
      error,
      new RegExp(
        `^push layer [0-9a-f]{12}: Head "http://127\\.0\\.0\\.1:${port}/v2/ns/pushme/blobs/sha256:[0-9a-f]{64}": dial tcp 127\\.0\\.0\\.1:${port}: connect: connection refused$`,
      ),
    );
  });

  it('a blob missing from the store: no response names the models directory, in any dialect', async () => {
    // A registry that has no blob and accepts uploads, so a push gets as far as reading the (missing) local blob.
    const registry = createHttpServer((req, res) => {
      if (req.method === 'HEAD') res.writeHead(404).end();
      else if (req.method === 'POST') res.writeHead(202, { location: '/v2/ns/gone/blobs/uploads/u1' }).end();
      else res.writeHead(500, { 'content-type': 'text/html' }).end('<html>internal</html>');
    });
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
    const host = `127.0.0.1:${(registry.address() as AddressInfo).port}`;
    const gguf = join(files, 'model.gguf');
    await writeTinyGguf(gguf, { chatTemplate: '{{ chatml }}' });
    for (const model of ['gone', `${host}/ns/gone`]) {
      const created = await postJson(`${t.baseUrl}/api/create`, { model, from: gguf, stream: false });
      assert.equal(created.status, 200, await created.clone().text());
    }
    // Remove every blob behind the manifest's back.
    for (const f of await readdir(join(t.modelsDir, 'blobs'))) await rm(join(t.modelsDir, 'blobs', f), { force: true });

    const answers: Array<[string, number, string]> = [];
    const call = async (path: string, body: unknown) => {
      const res = await postJson(`${t.baseUrl}${path}`, body);
      answers.push([path, res.status, await res.text()]);
    };
    await call('/api/show', { model: 'gone' });
    await call('/api/generate', { model: 'gone', prompt: 'hi', stream: false });
    await call('/api/chat', { model: 'gone', messages: [{ role: 'user', content: 'hi' }], stream: false });
    await call('/api/chat', { model: 'gone', messages: [{ role: 'user', content: 'hi' }] });
    await call('/api/embed', { model: 'gone', input: 'hi' });
    await call('/api/create', { model: 'copy-of-gone', from: 'gone', stream: false });
    await call('/v1/chat/completions', { model: 'gone', messages: [{ role: 'user', content: 'hi' }] });
    await call('/v1/messages', { model: 'gone', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    await call('/api/push', { model: `${host}/ns/gone`, insecure: true });
    registry.close();

    const failures = answers.filter(([, status, text]) => status >= 400 || /"error"/.test(text));
    assert.ok(failures.length >= 3, `the missing blob makes requests fail: ${JSON.stringify(answers)}`);
    for (const [path, status, text] of answers) {
      assert.ok(!text.includes(t.modelsDir), `${path} (${status}) names the models directory: ${text}`);
      assert.doesNotMatch(text, /llamad-e2e-|\/blobs\/sha256-/, `${path} (${status}): ${text}`);
      assert.doesNotMatch(text, /ENOENT/, `${path} (${status}) echoes the raw system error: ${text}`);
    }
  });
});
