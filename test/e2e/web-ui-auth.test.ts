import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { WEB_UI_ROOT } from '../../src/ui';
import { browserMissing, launchChromium, screenshot, seriousAxeViolations } from '../utils/browser';
import { FakeBinding } from '../utils/fake-binding';
import { createTestApp, TestApp } from '../utils/test-app';

const KEY = 'sesame-0123456789';
const skip =
  browserMissing() ??
  (existsSync(join(WEB_UI_ROOT, 'index.html')) ? false : 'the web UI is not built: run "npm run build"');

/** One request the page made: its URL and Authorization header. */
interface Seen {
  url: string;
  authorization?: string;
}

// The web UI with API keys set (docs/security.md "Web UI"): the page asks for a key, refuses a wrong one, keeps the
// right one in sessionStorage and sends it as a bearer token, never in a URL.
describe('web UI with API keys', { skip }, () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  const seen: Seen[] = [];

  before(async () => {
    t = await createTestApp({ binding: new FakeBinding(), config: { apiKeys: [KEY] } });
    browser = await launchChromium();
    // bypassCSP only for axe's injected script (the CSP itself is checked by web-ui.test.ts).
    page = await (await browser.newContext({ viewport: { width: 900, height: 560 }, bypassCSP: true })).newPage();
    page.on('request', (request) => {
      seen.push({ url: request.url(), authorization: request.headers()['authorization'] });
    });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  it('asks for a key, and a wrong key is refused', { timeout: 30_000 }, async () => {
    await page.goto(`${t.baseUrl}/ui/`);
    await page.getByRole('heading', { name: 'This server needs an API key' }).waitFor();
    await page.getByLabel('API key', { exact: true }).fill('wrong-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'The key was refused.' }).waitFor();
    assert.equal(await page.getByRole('navigation', { name: 'Pages' }).count(), 0);
    assert.equal(await page.evaluate<string | null>(`sessionStorage.getItem('llamad.apiKey')`), null);
    await screenshot(page, 'web-ui', 'login');
    assert.deepEqual(await seriousAxeViolations(page), []);
  });

  it(
    'signs in with the right key, sent as a bearer token on every call and never in a URL',
    { timeout: 30_000 },
    async () => {
      await page.getByLabel('API key', { exact: true }).fill(KEY);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('navigation', { name: 'Pages' }).waitFor();
      await page.getByRole('link', { name: 'Running' }).click();
      await page.getByText('No model is loaded.').waitFor();
      assert.equal(await page.evaluate<string | null>(`sessionStorage.getItem('llamad.apiKey')`), KEY);
      const api = seen.filter((s) => /\/(api\/|metrics)/.test(new URL(s.url).pathname));
      assert.ok(
        api.some((s) => s.authorization === `Bearer ${KEY}`),
        JSON.stringify(api),
      );
      const afterLogin = api.slice(api.findIndex((s) => s.authorization === `Bearer ${KEY}`));
      assert.ok(
        afterLogin.every((s) => s.authorization === `Bearer ${KEY}`),
        JSON.stringify(afterLogin),
      );
      assert.ok(
        seen.every((s) => !s.url.includes(KEY) && !s.url.includes('wrong-key')),
        'a key in a URL',
      );
    },
  );

  it('a key that stops working (revoked) brings the login back', { timeout: 30_000 }, async () => {
    // Any call with the revoked key brings the login back: the Running page's next poll may do it before a click on
    // a link could (the link is then gone), so the page is switched by its hash, which needs no link.
    await page.evaluate(`sessionStorage.setItem('llamad.apiKey', 'revoked')`);
    await page.evaluate(`location.hash = '#/metrics'`);
    await page.getByRole('heading', { name: 'This server needs an API key' }).waitFor();
  });
});
