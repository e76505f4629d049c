import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { REPO_ROOT } from '../../src/config';
import { missingPrograms } from './programs';

/** Debian's chromium (`apt-get install chromium`, installed by .ci/run); Playwright downloads no browser here. */
export const CHROMIUM_PATH = process.env.LLAMAD_CHROMIUM ?? '/usr/bin/chromium';

/** Where browser tests write their screenshots (gitignored; CI keeps them as artifacts). */
export const TEST_ARTIFACTS_DIR = join(REPO_ROOT, 'test-artifacts');

/** Why browser tests cannot run here (chromium missing), or undefined. */
export function browserMissing(): string | undefined {
  if (process.env.LLAMAD_CHROMIUM !== undefined) return undefined;
  return missingPrograms('chromium');
}

/** Starts headless chromium through playwright-core (no sandbox: CI runs as root in a container). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: ['--no-sandbox'], headless: true });
}

/** Saves a PNG of the page to `test-artifacts/<dir>/<name>.png`; returns its path. */
export async function screenshot(page: Page, dir: string, name: string): Promise<string> {
  const folder = join(TEST_ARTIFACTS_DIR, dir);
  mkdirSync(folder, { recursive: true });
  const path = join(folder, `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  return path;
}

/** One axe-core violation, the fields the tests report. */
export interface AxeViolation {
  id: string;
  impact?: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/**
 * Runs axe-core (node_modules/axe-core/axe.min.js, added as an inline script tag, so the page's context must be
 * created with `bypassCSP: true`: the UI's CSP allows no inline script) on the page; returns the violations whose
 * impact is serious or critical.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
  const violations = await page.evaluate<AxeViolation[]>('axe.run().then((result) => result.violations)');
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
