import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { WEB_UI_ROOT } from '../../src/ui';
import { browserMissing, launchChromium } from '../utils/browser';
import { FakeBinding } from '../utils/fake-binding';
import { ensureTestModels, TINY_LLAMA_SPM } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { testPng } from '../utils/png';
import { createTestApp, TestApp } from '../utils/test-app';

const skip =
  browserMissing() ??
  (existsSync(join(WEB_UI_ROOT, 'index.html')) ? false : 'the web UI is not built: run "npm run build"');

/** A conversation export with thinking, a tool call and its result, Markdown with code, and hostile HTML. */
const EXPORT = {
  llamad_conversations: 1,
  conversations: [
    {
      id: 'x',
      title: 'Imported weather chat',
      model: 'tiny:latest',
      settings: { system: '', think: true },
      updated: 1,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: '',
          thinking: 'The user wants the weather; call the tool.',
          tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }],
        },
        { role: 'tool', tool_name: 'get_weather', content: '{"temp": 21}' },
        {
          role: 'assistant',
          content:
            'It is **21 °C**.\n\n```json\n{"temp": 21}\n```\n\n<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>',
          stats: { eval_count: 12, prompt_eval_count: 30, tokens_per_second: 42.5 },
        },
      ],
    },
  ],
};

// The web UI's management parts in chromium, on a daemon with the fake engine (no generation needed): conversations
// (import, rendering of thinking, tool calls, Markdown, sanitizing; rename, export, delete), the Models page
// (details, copy, delete with confirmation, create from a Modelfile), and a `user` key refused gracefully.
describe('web UI: conversations and model management', { skip }, () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  let dir: string;

  before(async () => {
    ensureTestModels();
    dir = await mkdtemp(join(tmpdir(), 'llamad-web-ui-manage-'));
    await writeFile(
      join(dir, 'keys.yaml'),
      'keys:\n  - key: admin-key-1\n    name: ops\n  - key: user-key-1\n    name: team\n    role: user\n',
    );
    t = await createTestApp({
      binding: new FakeBinding(),
      config: { apiKeysFile: join(dir, 'keys.yaml'), allowServerPaths: true },
    });
    const res = await postJson(
      `${t.baseUrl}/api/create`,
      { model: 'tiny', modelfile: `FROM ${TINY_LLAMA_SPM}\n`, stream: false },
      { headers: { 'content-type': 'application/json', authorization: 'Bearer admin-key-1' } },
    );
    assert.equal(res.status, 200, await res.text());
    await writeFile(join(dir, 'export.json'), JSON.stringify(EXPORT));
    browser = await launchChromium();
    page = await (await browser.newContext({ acceptDownloads: true })).newPage();
    page.on('dialog', (dialog) => void dialog.accept());
    await page.goto(`${t.baseUrl}/ui/`);
    await page.getByLabel('API key', { exact: true }).fill('admin-key-1');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await t?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('imports a conversation and shows thinking folded, tool calls, tool results and sanitized Markdown', async () => {
    await page.setInputFiles('input[type=file][accept="application/json,.json"]', join(dir, 'export.json'));
    await page.getByRole('button', { name: 'Imported weather chat', exact: true }).click();
    const thinking = page.locator('details.thinking');
    await thinking.waitFor();
    assert.equal(await thinking.getAttribute('open'), null, 'thinking is folded');
    await page.getByRole('group', { name: 'tool call get_weather' }).waitFor();
    await page.getByRole('article', { name: 'tool result (get_weather) message' }).waitFor();
    assert.equal(await page.locator('.markdown strong').first().textContent(), '21 °C');
    await page.locator('.markdown pre code.hljs').first().waitFor();
    assert.equal(await page.locator('.markdown img[onerror], .markdown script').count(), 0);
    assert.equal(await page.evaluate('window.pwned'), undefined);
    assert.match((await page.getByTestId('answer-stats').textContent()) ?? '', /30 prompt tokens · 12 tokens · 42.5/);
  });

  it('renames, exports and deletes a conversation (with a confirmation)', async () => {
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByLabel('Title').fill('Paris weather');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('button', { name: 'Paris weather', exact: true }).waitFor();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export' }).click(),
    ]);
    const exported = JSON.parse(await readFile((await download.path())!, 'utf8')) as typeof EXPORT;
    assert.deepEqual(
      exported.conversations.map((c) => c.title),
      ['Paris weather'],
    );
    assert.equal(exported.conversations[0].messages.length, 4);
    await page.getByRole('button', { name: 'Delete Paris weather' }).click();
    await page.getByRole('button', { name: 'Paris weather', exact: true }).waitFor({ state: 'detached' });
  });

  it('attaches an image pasted into the message box', async () => {
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.evaluate(`(() => {
      const bytes = Uint8Array.from(atob('${testPng().toString('base64')}'), (c) => c.charCodeAt(0));
      const data = new DataTransfer();
      data.items.add(new File([bytes], 'pasted.png', { type: 'image/png' }));
      document.getElementById('prompt').dispatchEvent(
        new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }),
      );
    })()`);
    await page.getByRole('button', { name: 'Remove image 1' }).waitFor();
    await page.getByRole('button', { name: 'Remove image 1' }).click();
    await page.getByRole('button', { name: 'Remove image 1' }).waitFor({ state: 'detached' });
  });

  it('shows details, copies, creates from a Modelfile and deletes (confirmed) on the Models page', async () => {
    await page.getByRole('link', { name: 'Models' }).click();
    await page.getByRole('rowheader', { name: 'tiny:latest' }).waitFor();
    await page.getByRole('button', { name: 'Details of tiny:latest' }).click();
    await page
      .getByRole('region', { name: 'Details of tiny:latest' })
      .getByText('Modelfile', { exact: true })
      .waitFor();
    await page.selectOption('#copy-from', 'tiny:latest');
    await page.fill('#copy-to', 'tiny-copy');
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await page.getByRole('rowheader', { name: 'tiny-copy:latest' }).waitFor();
    await page.fill('#create-name', 'tiny-terse');
    await page.fill('#create-modelfile', 'FROM tiny\nPARAMETER temperature 0.2\nSYSTEM You are terse.');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('rowheader', { name: 'tiny-terse:latest' }).waitFor();
    const shown = (await (
      await postJson(
        `${t.baseUrl}/api/show`,
        { model: 'tiny-terse' },
        { headers: { authorization: 'Bearer admin-key-1' } },
      )
    ).json()) as { system?: string };
    assert.equal(shown.system, 'You are terse.');
    await page.getByRole('button', { name: 'Delete tiny-copy:latest' }).click();
    await page.getByRole('rowheader', { name: 'tiny-copy:latest' }).waitFor({ state: 'detached' });
  });

  it('a `user` key sees the models but its management calls are refused with the daemon’s message', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key', { exact: true }).fill('user-key-1');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Models' }).click();
    await page.getByRole('rowheader', { name: 'tiny:latest' }).waitFor();
    await page.getByRole('button', { name: 'Delete tiny:latest' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match((await alert.textContent()) ?? '', /Delete tiny:latest failed: .*(forbidden|not permitted|may not)/i);
    await page.getByRole('rowheader', { name: 'tiny:latest' }).waitFor();
  });
});
