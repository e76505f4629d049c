import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { WEB_UI_ROOT } from '../../src/ui';
import { browserMissing, launchChromium, screenshot, seriousAxeViolations } from '../utils/browser';
import { ensureTestModels, TINY_LLAMA_SPM, TINY_MMPROJ, TINY_QWEN2 } from '../utils/models';
import { postJson, readNdjson } from '../utils/ndjson';
import { testPng } from '../utils/png';
import { realAddon } from '../utils/real-addon';
import { registryMissing, RegistryServer, startRegistry } from '../utils/registry-server';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const built = existsSync(join(WEB_UI_ROOT, 'index.html'));
/** Why these tests cannot run here, or false. */
const skip =
  browserMissing() ?? addon.skip ?? (built ? false : `the web UI is not built (${WEB_UI_ROOT}): run "npm run build"`);
const skipRegistry = skip || registryMissing() || false;
const SHOTS = 'web-ui';

/** The value of the unlabelled gauge `name` in the daemon's /metrics. */
async function gauge(baseUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} not in /metrics`);
  return Number(line.split(' ')[1]);
}

/** Waits until `check` holds (polled every 100 ms), failing after `ms` (a hang guard, not a speed assertion). */
async function until(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The last assistant message's text in the page. */
function lastAnswer(page: Page): Promise<string> {
  return page.evaluate(`(() => {
    const all = document.querySelectorAll('.message.assistant .markdown');
    return all.length > 0 ? all[all.length - 1].textContent ?? '' : '';
  })()`);
}

/**
 * Records, in the page, the length of the last answer's text at every change of the messages while its statistics
 * line (shown from the `done` record) is absent: window.lengths holds what was on screen before the answer ended.
 */
const RECORD_LENGTHS = `(() => {
  window.lengths = [];
  new MutationObserver(() => {
    const all = document.querySelectorAll('.message.assistant');
    const last = all[all.length - 1];
    if (last && !last.querySelector('[data-testid=answer-stats]')) {
      window.lengths.push((last.querySelector('.markdown')?.textContent ?? '').length);
    }
  }).observe(document.querySelector('.messages'), { subtree: true, childList: true, characterData: true });
})()`;

/**
 * Runs `work` with the page's downloads throttled to `bytesPerSecond` (Chrome's network emulation through CDP), then
 * lifts the throttle.
 */
async function throttled(context: BrowserContext, page: Page, bytesPerSecond: number, work: () => Promise<void>) {
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  const set = (rate: number) =>
    cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: rate,
      uploadThroughput: -1,
    });
  await set(bytesPerSecond);
  try {
    await work();
  } finally {
    await set(-1);
    await cdp.detach();
  }
}

// The web UI (docs/ui.md) in Debian's chromium driven by playwright-core, against a real daemon on loopback with the
// real addon and the tiny test models: chat streaming, stop, an image, pull with progress, unload, metrics,
// accessibility (axe-core), CSP; screenshots under test-artifacts/web-ui/.
describe('web UI in a real browser', { skip }, () => {
  let t: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let dir: string;
  let registry: RegistryServer | undefined;
  let pullName = '';
  const cspErrors: string[] = [];

  before(async () => {
    ensureTestModels();
    dir = await mkdtemp(join(tmpdir(), 'llamad-web-ui-'));
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 512 } });
    for (const [model, modelfile] of [
      ['tiny', `FROM ${TINY_LLAMA_SPM}\n`],
      ['tiny-vision', `FROM ${TINY_LLAMA_SPM}\nFROM ${TINY_MMPROJ}\n`],
    ]) {
      const res = await postJson(`${t.baseUrl}/api/create`, { model, modelfile, stream: false });
      assert.equal(res.status, 200, await res.text());
    }
    if (!skipRegistry) {
      // A model in the local registry that the store no longer has: created, pushed, deleted here.
      registry = await startRegistry();
      pullName = `${registry.host}/test/qwen:latest`;
      const created = await postJson(`${t.baseUrl}/api/create`, {
        model: pullName,
        modelfile: `FROM ${TINY_QWEN2}\n`,
        stream: false,
      });
      assert.equal(created.status, 200, await created.text());
      const pushed = await readNdjson<{ status?: string }>(
        await postJson(`${t.baseUrl}/api/push`, { model: pullName, insecure: true }),
      );
      assert.equal(pushed.at(-1)?.status, 'success');
      const removed = await fetch(`${t.baseUrl}/api/delete`, {
        method: 'DELETE',
        body: JSON.stringify({ model: pullName }),
      });
      assert.equal(removed.status, 200);
    }
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1100, height: 700 } });
    page = await context.newPage();
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspErrors.push(message.text());
    });
    await page.goto(`${t.baseUrl}/ui/`);
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await t?.close();
    await registry?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it(
    'streams an answer from the tiny model token by token, with counts and tokens/s',
    { timeout: 60_000 },
    async () => {
      await page.selectOption('#model-picker', 'tiny:latest');
      await page.getByText('Settings', { exact: true }).click();
      await page.fill('#opt-num_predict', '64');
      await page.fill('#opt-seed', '7');
      // Every change of the answer's text while it streams, seen from inside the page.
      await page.evaluate(RECORD_LENGTHS);
      await page.fill('#prompt', 'Tell me a story');
      // On an idle machine the tiny model writes its 64 tokens within one animation frame: the browser's download is
      // throttled (Chrome's network emulation, 4 KB/s: the ≈ 7 KB NDJSON stream arrives over ≈ 2 s) so that the
      // page's rendering of the stream as it arrives is what is judged, not how fast the model is.
      const stats = page.locator('.message.assistant [data-testid=answer-stats]').last();
      await throttled(context, page, 4096, async () => {
        await page.getByRole('button', { name: 'Send' }).click();
        await stats.waitFor({ timeout: 30_000 });
      });
      assert.match((await stats.textContent()) ?? '', /\d+ prompt tokens · 64 tokens · [\d.]+ tokens\/s/);
      const lengths = await page.evaluate<number[]>('window.lengths');
      // Text on screen before the `done` record, growing (the stream's chunks may each carry several tokens).
      assert.ok(new Set(lengths.filter((n) => n > 0)).size >= 2, `the answer grew in steps: ${lengths.join(',')}`);
      assert.ok((await lastAnswer(page)).length > 0);
      await screenshot(page, SHOTS, 'chat');
    },
  );

  it('Stop cancels a long answer: the daemon’s request ends', { timeout: 60_000 }, async () => {
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.fill('#opt-num_predict', '100000');
    await page.fill('#opt-temperature', '0');
    await page.fill('#prompt', 'Count forever');
    // Throttled as above: unthrottled, the tiny model's endless answer reaches the page faster than any page could
    // lay it out, and the test would measure the machine instead of the Stop button.
    await throttled(context, page, 8192, async () => {
      await page.getByRole('button', { name: 'Send' }).click();
      await until('the answer to stream', async () => (await lastAnswer(page)).length > 40);
      assert.equal(await gauge(t.baseUrl, 'llamad_requests_running'), 1);
      await page.getByRole('button', { name: 'Stop' }).click();
    });
    await until(
      'the request to end on the server',
      async () => (await gauge(t.baseUrl, 'llamad_requests_running')) === 0,
    );
    // The runner frees the slot once the cancel reached it, and reports its usage right after: the HTTP request may
    // end a moment before /api/ps shows the slot free.
    await until('the slot to be free in /api/ps', async () => {
      const ps = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as {
        models: { parallel?: { slots_busy: number } }[];
      };
      return ps.models.every((m) => (m.parallel?.slots_busy ?? 0) === 0);
    });
    assert.match(await lastAnswer(page), /\(stopped\)/);
    await page.getByRole('button', { name: 'Send' }).waitFor();
  });

  it('sends an attached image to the vision model', { timeout: 60_000 }, async () => {
    const png = join(dir, 'picture.png');
    await writeFile(png, testPng());
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.selectOption('#model-picker', 'tiny-vision:latest');
    await page.fill('#opt-num_predict', '6');
    await page.setInputFiles('input[type=file][accept="image/*"]', png);
    await page.getByRole('button', { name: 'Remove image 1' }).waitFor();
    await page.fill('#prompt', 'What is in this picture?');
    const [request] = await Promise.all([
      page.waitForRequest((r) => r.url().endsWith('/api/chat') && r.method() === 'POST'),
      page.getByRole('button', { name: 'Send' }).click(),
    ]);
    const body = request.postDataJSON() as { messages: { role: string; images?: string[] }[] };
    assert.deepEqual(body.messages.at(-1)?.images, [testPng().toString('base64')]);
    const stats = page.locator('.message.assistant [data-testid=answer-stats]').last();
    await stats.waitFor({ timeout: 30_000 });
    assert.match((await stats.textContent()) ?? '', / 6 tokens /);
    await page.getByRole('img', { name: 'attached image 1' }).waitFor();
    assert.equal(await page.getByRole('alert').count(), 0);
  });

  it(
    'pulls a model from the local registry with a progress bar per layer reaching 100 %',
    { skip: skipRegistry, timeout: 90_000 },
    async () => {
      await page.getByRole('link', { name: 'Models' }).click();
      await page.fill('#pull-name', pullName);
      await page.check('#pull-insecure');
      await page.getByRole('button', { name: 'Pull', exact: true }).click();
      await page.getByText(`Pull ${pullName}: success`).waitFor({ timeout: 60_000 });
      const bars = await page.evaluate<[number, number][]>(
        `[...document.querySelectorAll('.layers progress')].map((e) => [e.value, e.max])`,
      );
      assert.ok(bars.length >= 2, `layers: ${JSON.stringify(bars)}`);
      for (const [value, max] of bars) assert.equal(value, max);
      const percents = await page.locator('.layers .percent').allTextContents();
      assert.ok(
        percents.every((p) => p === '100 %'),
        percents.join(','),
      );
      await page.getByRole('rowheader', { name: pullName.replace(/:latest$/, '') + ':latest' }).waitFor();
      await screenshot(page, SHOTS, 'models');
    },
  );

  it('unloads a model from the Running page', { timeout: 60_000 }, async () => {
    await page.getByRole('link', { name: 'Running' }).click();
    await page.getByRole('rowheader', { name: 'tiny-vision:latest' }).waitFor();
    await screenshot(page, SHOTS, 'running');
    await page.getByRole('button', { name: 'Unload tiny-vision:latest' }).click();
    await page.getByRole('rowheader', { name: 'tiny-vision:latest' }).waitFor({ state: 'detached' });
    const ps = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as { models: { name: string }[] };
    assert.ok(!ps.models.some((m) => m.name === 'tiny-vision:latest'), JSON.stringify(ps));
  });

  it('charts /metrics', { timeout: 30_000 }, async () => {
    await page.getByRole('link', { name: 'Metrics' }).click();
    await page.locator('figure.chart').nth(2).waitFor();
    await until('two scrapes', async () => (await page.locator('polyline').count()) >= 3);
    assert.match(
      (await page.getByRole('img', { name: /^Tokens generated per second/ }).getAttribute('aria-label')) ?? '',
      /tokens\/s/,
    );
    await screenshot(page, SHOTS, 'metrics');
  });

  it(
    'has no serious or critical accessibility violations (axe-core) and no CSP violation',
    { timeout: 60_000 },
    async () => {
      // axe is injected as a script tag, which the page's own CSP forbids: a separate context bypasses it.
      const axeContext = await browser.newContext({ bypassCSP: true });
      try {
        const axePage = await axeContext.newPage();
        for (const name of ['chat', 'models', 'running', 'metrics']) {
          await axePage.goto(`${t.baseUrl}/ui/#/${name}`);
          await axePage.getByRole('navigation', { name: 'Pages' }).waitFor();
          await axePage.waitForTimeout(300);
          const violations = await seriousAxeViolations(axePage);
          assert.deepEqual(
            violations.map((v) => `${v.id} (${v.impact}): ${v.help} ${JSON.stringify(v.nodes.map((n) => n.target))}`),
            [],
            name,
          );
        }
      } finally {
        await axeContext.close();
      }
      assert.deepEqual(cspErrors, []);
    },
  );
});
