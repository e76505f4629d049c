import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { appendFile, mkdtemp, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { MAX_JSON_DEPTH } from '../../src/common/http';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

/** A raw HTTP exchange: node:http lets a test set Host and Origin freely. */
interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function raw(
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<RawResponse> {
  const url = new URL(path, baseUrl);
  // node:http frames a DELETE or OPTIONS body only with an explicit content-length.
  const framing = body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method,
        path: url.pathname + url.search,
        headers: { ...framing, ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function modelNames(baseUrl: string): Promise<string[]> {
  const res = await fetch(`${baseUrl}/api/tags`);
  assert.equal(res.status, 200);
  const body = (await res.json()) as { models: Array<{ name: string }> };
  return body.models.map((m) => m.name).sort();
}

/** Creates model `name` from a metadata-only GGUF over the API (a loopback client). */
async function createModel(t: TestApp, name: string, init: RequestInit = {}): Promise<void> {
  const path = join(t.modelsDir, `${name}.gguf`);
  await writeTinyGguf(path, { chatTemplate: '{{ chatml }}' });
  const res = await postJson(
    `${t.baseUrl}/api/create`,
    { model: name, modelfile: `FROM ${path}`, stream: false },
    init,
  );
  assert.equal(res.status, 200, await res.text());
}

const EVIL = 'https://evil.example';

// reference/ollama-api.md §1.2 and §1.3; docs/security.md.
describe('request gate: Origin and Host on a loopback bind', () => {
  let t: TestApp;
  const binding = new FakeBinding();

  before(async () => {
    t = await createTestApp({ binding, config: { origins: ['https://*.example.org', 'chrome-extension://*'] } });
    await createModel(t, 'base');
    binding.script = () => ({ pieces: ['Hi', ' there'] });
  });

  after(() => t.close());

  it('a foreign Origin is 403 with an empty body on GET, POST (JSON and text/plain), DELETE and OPTIONS', async () => {
    const cases: Array<[string, string, Record<string, string>, string?]> = [
      ['GET', '/api/tags', {}],
      ['GET', '/v1/models', {}],
      ['POST', '/api/copy', { 'content-type': 'application/json' }, '{"source":"base","destination":"stolen"}'],
      ['POST', '/api/copy', { 'content-type': 'text/plain' }, '{"source":"base","destination":"stolen2"}'],
      ['DELETE', '/api/delete', { 'content-type': 'application/json' }, '{"model":"base"}'],
      ['DELETE', '/api/delete', { 'content-type': 'text/plain' }, '{"model":"base"}'],
      ['OPTIONS', '/api/delete', { 'access-control-request-method': 'DELETE' }],
      ['POST', '/api/nothing-here', {}, '{}'],
      ['POST', '/api/blobs/sha256:' + '0'.repeat(64), { 'content-type': 'application/octet-stream' }, 'bytes'],
      ['POST', '/v1/audio/transcriptions', { 'content-type': 'multipart/form-data; boundary=x' }, '--x--\r\n'],
    ];
    for (const [method, path, headers, body] of cases) {
      const res = await raw(t.baseUrl, method, path, { origin: EVIL, ...headers }, body);
      assert.equal(res.status, 403, `${method} ${path}`);
      assert.equal(res.body, '', `${method} ${path}: empty body`);
      assert.equal(res.headers['access-control-allow-origin'], undefined);
    }
    assert.deepEqual(await modelNames(t.baseUrl), ['base:latest'], 'nothing was copied or deleted');
  });

  it('requests without an Origin (curl, SDKs) are unaffected', async () => {
    const res = await raw(t.baseUrl, 'GET', '/api/tags');
    assert.equal(res.status, 200);
    assert.equal(res.headers['access-control-allow-origin'], undefined);
  });

  it('default origins get the CORS headers', async () => {
    for (const origin of [
      'http://localhost',
      'http://localhost:3000',
      'https://127.0.0.1:8443',
      'http://0.0.0.0:5173',
      'vscode-webview://1a2b3c',
      'app://obsidian.md',
      'tauri://localhost',
      'file://',
    ]) {
      const res = await raw(t.baseUrl, 'GET', '/api/tags', { origin });
      assert.equal(res.status, 200, origin);
      assert.equal(res.headers['access-control-allow-origin'], origin);
      assert.equal(res.headers['vary'], 'Origin');
    }
    for (const origin of ['http://localhost.evil.example', 'https://127.0.0.1.nip.io', 'null', 'http://10.0.0.1']) {
      assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', { origin })).status, 403, origin);
    }
  });

  it('OLLAMA_ORIGINS wildcards are honoured, and nothing else', async () => {
    for (const origin of ['https://app.example.org', 'chrome-extension://abcdefgh']) {
      const res = await raw(t.baseUrl, 'GET', '/api/version', { origin });
      assert.equal(res.status, 200, origin);
      assert.equal(res.headers['access-control-allow-origin'], origin);
    }
    for (const origin of ['https://example.org.evil.example', 'http://app.example.org', 'moz-extension://abc']) {
      assert.equal((await raw(t.baseUrl, 'GET', '/api/version', { origin })).status, 403, origin);
    }
  });

  it('a preflight from an allowed origin is 204 with methods, headers and max-age; the request then works', async () => {
    const origin = 'http://localhost:3000';
    const pre = await raw(t.baseUrl, 'OPTIONS', '/v1/chat/completions', {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization,content-type,x-stainless-new-header,openai-foo,x-custom',
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers['access-control-allow-origin'], origin);
    assert.match(String(pre.headers['access-control-allow-methods']), /POST/);
    assert.match(String(pre.headers['access-control-allow-methods']), /DELETE/);
    const allowed = String(pre.headers['access-control-allow-headers'])
      .split(',')
      .map((h) => h.trim().toLowerCase());
    for (const h of ['authorization', 'content-type', 'x-api-key', 'anthropic-version', 'anthropic-beta']) {
      assert.ok(allowed.includes(h), h);
    }
    assert.ok(allowed.includes('x-stainless-new-header') && allowed.includes('openai-foo'));
    assert.ok(!allowed.includes('x-custom'), 'an unknown header family is not allowed');
    assert.equal(pre.headers['access-control-max-age'], '43200');

    const del = await raw(t.baseUrl, 'OPTIONS', '/api/delete', { origin, 'access-control-request-method': 'DELETE' });
    assert.equal(del.status, 204);
  });

  it('a streamed response to an allowed origin carries the CORS header', async () => {
    const origin = 'http://localhost:3000';
    const res = await raw(t.baseUrl, 'POST', '/api/generate', { origin }, '{"model":"base","prompt":"hi"}');
    assert.equal(res.status, 200, res.body);
    assert.match(String(res.headers['content-type']), /ndjson/);
    assert.equal(res.headers['access-control-allow-origin'], origin);
    assert.match(res.body, /"done":true/);
  });

  it('Host: evil.example is 403 (DNS rebinding); local names and private IPs are served', async () => {
    const port = new URL(t.baseUrl).port;
    for (const host of ['evil.example', `evil.example:${port}`, '8.8.8.8', `attacker.localhost.evil.example:${port}`]) {
      const res = await raw(t.baseUrl, 'GET', '/api/tags', { host });
      assert.equal(res.status, 403, host);
      assert.equal(res.body, '');
    }
    const del = await raw(t.baseUrl, 'DELETE', '/api/delete', { host: 'evil.example' }, '{"model":"base"}');
    assert.equal(del.status, 403);
    for (const host of [
      `localhost:${port}`,
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
      'app.localhost',
      'nas.local',
      'svc.internal',
      '192.168.1.20:11434',
      '10.1.2.3',
      '0.0.0.0',
    ]) {
      const res = await raw(t.baseUrl, 'GET', '/api/tags', { host });
      assert.equal(res.status, 200, host);
    }
    assert.deepEqual(await modelNames(t.baseUrl), ['base:latest']);
  });
});

describe('request gate: any Host on a 0.0.0.0 bind', () => {
  let t: TestApp;

  before(async () => {
    t = await createTestApp({ binding: new FakeBinding(), listenHost: '0.0.0.0' });
  });

  after(() => t.close());

  it('serves Host: evil.example (the check applies only to loopback binds, as Ollama)', async () => {
    const res = await raw(t.baseUrl, 'GET', '/api/tags', { host: 'evil.example' });
    assert.equal(res.status, 200);
  });

  it('still refuses a foreign Origin', async () => {
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', { origin: EVIL })).status, 403);
  });
});

// docs/security.md "API keys" (beyond Ollama).
describe('API keys (LLAMAD_API_KEYS, LLAMAD_API_KEYS_FILE)', () => {
  let t: TestApp;
  let dir: string;
  let keysFile: string;
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'llamad-keys-'));
    keysFile = join(dir, 'keys');
    await writeFile(keysFile, '# team keys\nfile-key-1\n\n');
    t = await createTestApp({
      binding: new FakeBinding(),
      config: { apiKeys: ['env-key'], apiKeysFile: keysFile, allowServerPaths: true },
    });
    await createModel(t, 'base', { headers: bearer('env-key') });
  });

  after(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('/, /api/version and HEAD / need no key', async () => {
    assert.equal((await raw(t.baseUrl, 'GET', '/')).status, 200);
    assert.equal((await raw(t.baseUrl, 'HEAD', '/')).status, 200);
    assert.equal((await raw(t.baseUrl, 'GET', '/api/version')).status, 200);
  });

  it('401 without a key, 200 with Bearer and with x-api-key (env and file keys)', async () => {
    const missing = await raw(t.baseUrl, 'GET', '/api/tags');
    assert.equal(missing.status, 401);
    assert.match(String(missing.headers['content-type']), /application\/json/);
    const body = JSON.parse(missing.body) as { error: string };
    assert.equal(typeof body.error, 'string');
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', bearer('wrong'))).status, 401);
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', { 'x-api-key': 'env-keyX' })).status, 401);
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', bearer('env-key'))).status, 200);
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', { 'x-api-key': 'env-key' })).status, 200);
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', { authorization: 'bearer file-key-1' })).status, 200);
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', { 'x-api-key': 'file-key-1' })).status, 200);
  });

  it('a refused request has no side effect', async () => {
    const del = await raw(t.baseUrl, 'DELETE', '/api/delete', {}, '{"model":"base"}');
    assert.equal(del.status, 401);
    const res = await raw(t.baseUrl, 'GET', '/api/tags', bearer('env-key'));
    assert.match(res.body, /"base:latest"/);
  });

  it('the 401 body is in each route dialect', async () => {
    const chat = '{"model":"base","messages":[{"role":"user","content":"hi"}]}';
    const openai = await raw(t.baseUrl, 'POST', '/v1/chat/completions', { 'x-api-key': 'nope' }, chat);
    assert.equal(openai.status, 401);
    const oBody = JSON.parse(openai.body) as { error: { type: string; code: string; message: string } };
    assert.equal(oBody.error.type, 'invalid_request_error');
    assert.equal(oBody.error.code, 'invalid_api_key');
    assert.doesNotMatch(oBody.error.message, /nope/, 'the key is never echoed');
    const models = JSON.parse((await raw(t.baseUrl, 'GET', '/v1/models')).body) as { error: { code: string } };
    assert.equal(models.error.code, 'invalid_api_key');

    const anthropic = await raw(
      t.baseUrl,
      'POST',
      '/v1/messages',
      { 'anthropic-version': '2023-06-01' },
      '{"model":"base","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}',
    );
    assert.equal(anthropic.status, 401);
    const aBody = JSON.parse(anthropic.body) as { type: string; error: { type: string } };
    assert.equal(aBody.type, 'error');
    assert.equal(aBody.error.type, 'authentication_error');

    const native = await raw(t.baseUrl, 'POST', '/api/chat', {}, chat);
    assert.equal(native.status, 401);
    assert.deepEqual(Object.keys(JSON.parse(native.body) as object), ['error']);
  });

  it('the official openai client works with its apiKey', async () => {
    const good = new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: 'file-key-1', maxRetries: 0 });
    const list = await good.models.list();
    assert.deepEqual(
      list.data.map((m) => m.id),
      ['base:latest'],
    );
    const bad = new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: 'not-a-key', maxRetries: 0 });
    await assert.rejects(() => bad.models.list(), OpenAI.AuthenticationError);
  });

  it('a key added to the file works without a restart; a removed one stops working', async () => {
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', bearer('file-key-2'))).status, 401);
    await appendFile(keysFile, 'file-key-2\n');
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', bearer('file-key-2'))).status, 200);
    await writeFile(keysFile, 'file-key-2\n');
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', bearer('file-key-1'))).status, 401);
  });

  it('SIGHUP re-reads the file even when its size and mtime look unchanged', async () => {
    // Same size, same (pinned) mtime, same inode: only a SIGHUP tells the daemon to look again.
    const pinned = new Date('2025-01-01T00:00:00Z');
    await writeFile(keysFile, 'aaaa-key-3\n');
    await utimes(keysFile, pinned, pinned);
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', bearer('aaaa-key-3'))).status, 200);
    const ino = (await stat(keysFile)).ino;
    await writeFile(keysFile, 'bbbb-key-3\n');
    await utimes(keysFile, pinned, pinned);
    assert.equal((await stat(keysFile)).ino, ino);
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', bearer('bbbb-key-3'))).status, 401);
    process.kill(process.pid, 'SIGHUP');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', bearer('bbbb-key-3'))).status, 200);
  });

  it('an unreadable keys file refuses every key but the environment ones (fail closed)', async () => {
    await rm(keysFile);
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', bearer('bbbb-key-3'))).status, 401);
    assert.equal((await raw(t.baseUrl, 'GET', '/api/tags', bearer('env-key'))).status, 200);
  });
});

// docs/security.md "Input limits".
describe('input hardening', () => {
  let t: TestApp;

  before(async () => {
    t = await createTestApp({ binding: new FakeBinding() });
  });

  after(() => t.close());

  const deep = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

  it(`JSON nested deeper than ${MAX_JSON_DEPTH} levels is a 400 in every dialect, even inside an unknown field`, async () => {
    const bodies = [
      `{"model":"m","prompt":"hi","junk":${deep(20_000)}}`,
      `{"model":"m","messages":${deep(MAX_JSON_DEPTH + 1)}}`,
    ];
    for (const body of bodies) {
      const native = await raw(t.baseUrl, 'POST', '/api/generate', {}, body);
      assert.equal(native.status, 400, native.body);
      assert.match((JSON.parse(native.body) as { error: string }).error, /nested too deeply/);

      const openai = await raw(t.baseUrl, 'POST', '/v1/chat/completions', {}, body);
      assert.equal(openai.status, 400, openai.body);
      const oBody = JSON.parse(openai.body) as { error: { type: string; message: string } };
      assert.equal(oBody.error.type, 'invalid_request_error');
      assert.match(oBody.error.message, /nested too deeply/);

      const anthropic = await raw(t.baseUrl, 'POST', '/v1/messages', {}, body);
      assert.equal(anthropic.status, 400, anthropic.body);
      const aBody = JSON.parse(anthropic.body) as { type: string; error: { type: string } };
      assert.equal(aBody.type, 'error');
      assert.equal(aBody.error.type, 'invalid_request_error');
    }
    assert.equal((await raw(t.baseUrl, 'GET', '/')).status, 200, 'the daemon still serves');
  });

  it(`nesting up to ${MAX_JSON_DEPTH} levels passes the parser`, async () => {
    const res = await raw(t.baseUrl, 'POST', '/api/show', {}, `{"model":"missing","x":${deep(MAX_JSON_DEPTH - 1)}}`);
    assert.equal(res.status, 404, res.body);
  });
});
