import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { LlamadModule, NATIVE_BINDING } from '../../src';
import { WEB_UI_ROOT } from '../../src/ui';
import { FakeBinding } from '../utils/fake-binding';
import { createTestApp, TestApp } from '../utils/test-app';

/** The built page (npm run build writes it; the tests that read it skip without it). */
const built = existsSync(join(WEB_UI_ROOT, 'index.html'));
const skipUnbuilt = built ? false : `the web UI is not built (${WEB_UI_ROOT}): run "npm run build"`;

/** The first script bundle the built page loads (`./assets/index-<hash>.js`). */
function scriptPath(): string {
  const html = readFileSync(join(WEB_UI_ROOT, 'index.html'), 'utf8');
  const src = /<script[^>]*src="\.\/(assets\/[^"]+\.js)"/.exec(html)?.[1];
  assert.ok(src, html);
  return src;
}

/** GET with a Host header of our choosing (fetch cannot set Host); resolves the status. */
function getWithHost(baseUrl: string, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}${path}`, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

// The web UI's serving (docs/ui.md, docs/security.md "Web UI"): /ui from dist/ui with a strict CSP, behind the same
// Origin/Host gate as the API, no key needed for the page itself, off with LLAMAD_UI=0; GET / unchanged.
describe('web UI serving (daemon)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ binding: new FakeBinding() });
  });
  after(() => t?.close());

  it('GET / still answers "Ollama is running"', async () => {
    const res = await fetch(`${t.baseUrl}/`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'Ollama is running');
  });

  it('GET /ui redirects to /ui/ (the page’s URLs are relative to it), keeping the query', async () => {
    const res = await fetch(`${t.baseUrl}/ui?x=1`, { redirect: 'manual' });
    assert.equal(res.status, 308);
    assert.equal(res.headers.get('location'), '/ui/?x=1');
  });

  it('GET /ui/ answers the page with a strict CSP and no inline script', { skip: skipUnbuilt }, async () => {
    const res = await fetch(`${t.baseUrl}/ui/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    const html = await res.text();
    for (const tag of html.match(/<script\b[^>]*>/g) ?? []) assert.match(tag, /\ssrc="\.\//, tag);
    assert.doesNotMatch(html, /<script\b[^>]*>\s*[^<\s]/, 'inline script');
    assert.doesNotMatch(html, /https?:\/\//, 'no absolute URL (no CDN)');
  });

  it('serves the hashed bundle with the CSP, long-cached', { skip: skipUnbuilt }, async () => {
    const res = await fetch(`${t.baseUrl}/ui/${scriptPath()}`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /javascript/);
    assert.match(res.headers.get('cache-control') ?? '', /immutable/);
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'self'/);
    assert.ok((await res.arrayBuffer()).byteLength > 1000);
    const missing = await fetch(`${t.baseUrl}/ui/assets/nothing-here.js`);
    assert.equal(missing.status, 404);
    const escape = await fetch(`${t.baseUrl}/ui/assets/..%2f..%2fpackage.json`);
    assert.ok(escape.status === 404 || escape.status === 403, String(escape.status));
  });

  it(
    'keeps the shipped JavaScript within the budget of docs/ui.md (250,000 bytes, 80,000 gzipped)',
    { skip: skipUnbuilt },
    () => {
      const scripts = readdirSync(join(WEB_UI_ROOT, 'assets')).filter((f) => f.endsWith('.js'));
      assert.ok(scripts.length > 0);
      const bytes = Buffer.concat(scripts.map((f) => readFileSync(join(WEB_UI_ROOT, 'assets', f))));
      assert.ok(bytes.length <= 250_000, `${bytes.length} bytes of JavaScript`);
      assert.ok(gzipSync(bytes, { level: 9 }).length <= 80_000, 'gzipped JavaScript over budget');
    },
  );

  it('the Origin/Host gate judges the UI routes like the API (403 for a foreign origin or a rebound host)', async () => {
    for (const path of ['/ui/', '/ui', ...(built ? [`/ui/${scriptPath()}`] : [])]) {
      const foreign = await fetch(`${t.baseUrl}${path}`, { headers: { origin: 'https://evil.example' } });
      assert.equal(foreign.status, 403, path);
      assert.equal(await getWithHost(t.baseUrl, path, 'evil.example'), 403, path);
      assert.notEqual(await getWithHost(t.baseUrl, path, 'localhost'), 403, path);
      const same = await fetch(`${t.baseUrl}${path}`, { headers: { origin: t.baseUrl }, redirect: 'manual' });
      assert.ok(same.status === 200 || same.status === 308, `${path}: ${same.status}`);
    }
  });
});

describe('web UI serving: LLAMAD_UI=0 and API keys', () => {
  it('with ui off, /ui is an unknown route (404)', async () => {
    const t = await createTestApp({ binding: new FakeBinding(), config: { ui: false } });
    try {
      assert.equal((await fetch(`${t.baseUrl}/ui/`)).status, 404);
      assert.equal(await (await fetch(`${t.baseUrl}/`)).text(), 'Ollama is running');
    } finally {
      await t.close();
    }
  });

  it('with API keys set, the page loads without a key while the API refuses it', { skip: skipUnbuilt }, async () => {
    const t = await createTestApp({ binding: new FakeBinding(), config: { apiKeys: ['sesame'] } });
    try {
      assert.equal((await fetch(`${t.baseUrl}/ui/`)).status, 200);
      assert.equal((await fetch(`${t.baseUrl}/api/tags`)).status, 401);
      const ok = await fetch(`${t.baseUrl}/api/tags`, { headers: { authorization: 'Bearer sesame' } });
      assert.equal(ok.status, 200);
    } finally {
      await t.close();
    }
  });
});

describe('web UI in a host application (LlamadModule `ui` option)', () => {
  let modelsDir: string;
  before(async () => {
    modelsDir = await mkdtemp(join(tmpdir(), 'llamad-ui-host-'));
  });
  after(() => rm(modelsDir, { recursive: true, force: true }));

  async function host(ui: boolean | undefined): Promise<{ app: NestFastifyApplication; base: string }> {
    @Module({
      imports: [
        LlamadModule.forRoot({
          prefix: '/llm',
          ...(ui === undefined ? {} : { ui }),
          config: { modelsDir, logging: false },
          providers: [{ provide: NATIVE_BINDING, useValue: () => new FakeBinding() }],
        }),
      ],
    })
    class HostModule {}
    const app = await NestFactory.create<NestFastifyApplication>(HostModule, new FastifyAdapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    const address = app.getHttpServer().address();
    const port = typeof address === 'object' && address ? address.port : 0;
    return { app, base: `http://127.0.0.1:${port}` };
  }

  it('ui: true mounts it under the prefix, behind the module’s gate', { skip: skipUnbuilt }, async () => {
    const { app, base } = await host(true);
    try {
      const page = await fetch(`${base}/llm/ui/`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'self'/);
      const asset = await fetch(`${base}/llm/ui/${scriptPath()}`);
      assert.equal(asset.status, 200);
      await asset.arrayBuffer(); // a host app without forceCloseConnections waits for an unread response on close
      const foreign = await fetch(`${base}/llm/ui/`, { headers: { origin: 'https://evil.example' } });
      assert.equal(foreign.status, 403);
      const foreignAsset = await fetch(`${base}/llm/ui/${scriptPath()}`, {
        headers: { origin: 'https://evil.example' },
      });
      assert.equal(foreignAsset.status, 403);
      assert.equal((await fetch(`${base}/ui/`)).status, 404);
    } finally {
      await app.close();
    }
  });

  it('by default the library mounts no UI', async () => {
    const { app, base } = await host(undefined);
    try {
      assert.equal((await fetch(`${base}/llm/ui/`)).status, 404);
      assert.equal((await fetch(`${base}/llm/api/tags`)).status, 200);
    } finally {
      await app.close();
    }
  });
});
