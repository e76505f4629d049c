import Fastify from 'fastify';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { installWebUi, WEB_UI_CSP } from '../../../src/ui';

// installWebUi on a bare Fastify instance (both trailing-slash settings) with a built folder made here, and without
// one (a tsc-only build): the page, its assets, the headers, the redirect, the hint.
describe('installWebUi', () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'llamad-web-ui-unit-'));
    await mkdir(join(root, 'assets'));
    await writeFile(join(root, 'index.html'), '<!doctype html><script type="module" src="./assets/a.js"></script>');
    await writeFile(join(root, 'assets', 'a.js'), 'console.log(1)');
  });
  after(() => rm(root, { recursive: true, force: true }));

  for (const ignoreTrailingSlash of [true, false]) {
    it(`serves the page and assets under the path (ignoreTrailingSlash ${ignoreTrailingSlash})`, async () => {
      const fastify = Fastify({ ignoreTrailingSlash });
      installWebUi(fastify, { path: '/llm/ui/', root });
      try {
        const redirect = await fastify.inject({ url: '/llm/ui?a=b' });
        assert.equal(redirect.statusCode, 308);
        assert.equal(redirect.headers.location, '/llm/ui/?a=b');
        const page = await fastify.inject({ url: '/llm/ui/' });
        assert.equal(page.statusCode, 200);
        assert.match(String(page.headers['content-type']), /^text\/html/);
        assert.equal(page.headers['content-security-policy'], WEB_UI_CSP);
        assert.equal(page.headers['cache-control'], 'no-cache');
        assert.match(page.body, /assets\/a\.js/);
        const asset = await fastify.inject({ url: '/llm/ui/assets/a.js' });
        assert.equal(asset.statusCode, 200);
        assert.equal(asset.body, 'console.log(1)');
        assert.equal(asset.headers['content-security-policy'], WEB_UI_CSP);
        assert.equal(asset.headers['x-content-type-options'], 'nosniff');
        assert.match(String(asset.headers['cache-control']), /immutable/);
        assert.equal((await fastify.inject({ url: '/llm/ui/assets/none.js' })).statusCode, 404);
        assert.equal((await fastify.inject({ url: '/llm/ui/index.html/../../x' })).statusCode, 404);
      } finally {
        await fastify.close();
      }
    });
  }

  it('answers 404 with a hint when the UI was not built, without failing the server', async () => {
    const fastify = Fastify({ ignoreTrailingSlash: true });
    installWebUi(fastify, { path: '/ui', root: join(root, 'missing') });
    try {
      const page = await fastify.inject({ url: '/ui/' });
      assert.equal(page.statusCode, 404);
      assert.match(page.body, /not built: run "npm run build"/);
    } finally {
      await fastify.close();
    }
  });

  it('keeps a policy without inline script, eval or foreign origins', () => {
    assert.match(WEB_UI_CSP, /^default-src 'self'; script-src 'self';/);
    assert.doesNotMatch(WEB_UI_CSP, /unsafe|https?:|\*/);
  });
});
