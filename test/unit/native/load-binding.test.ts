import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ModelLoadError } from '../../../src/common/errors';
import { REPO_ROOT } from '../../../src/config';
import { loadBinding } from '../../../src/native';

const OURS = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const dir = mkdtempSync(join(tmpdir(), 'llamad-load-binding-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A prebuilt package folder carrying `version` and a bin/llamad.node that is not a loadable addon. */
function fakePackage(name: string, version: string): string {
  const root = join(dir, name);
  mkdirSync(join(root, 'bin'), { recursive: true });
  writeFileSync(join(root, 'package.json'), JSON.stringify({ name: `@llamad/${name}`, version }));
  writeFileSync(join(root, 'bin', 'llamad.node'), 'not an addon');
  return join(root, 'bin', 'llamad.node');
}

describe('loadBinding with the addon chosen by the daemon', () => {
  it('refuses a prebuilt package of another llamad version before loading it, naming both versions', () => {
    const path = fakePackage('linux-x64-old', '0.0.1-old');
    assert.throws(
      () => loadBinding({ path, backend: 'cpu', origin: 'package', packageName: '@llamad/linux-x64' }),
      (err: unknown) =>
        err instanceof ModelLoadError &&
        err.message.includes(`@llamad/linux-x64@0.0.1-old at ${path} does not match llamad ${OURS}`) &&
        err.message.includes(`npm install @llamad/linux-x64@${OURS}`) &&
        err.message.includes('npx llamad build'),
    );
  });

  it('loads exactly the given file (no search): a matching package that is not an addon fails on that path', () => {
    const path = fakePackage('linux-x64-same', OURS);
    assert.throws(
      () => loadBinding({ path, backend: 'cpu', origin: 'package', packageName: '@llamad/linux-x64' }),
      (err: unknown) =>
        !(err instanceof ModelLoadError) &&
        err instanceof Error &&
        err.message.startsWith(`native addon at ${path} failed to load:`) &&
        err.message.includes('reinstall @llamad/linux-x64'),
    );
  });
});
