import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ModelLoadError } from '../../../src/common/errors';
import { REPO_ROOT } from '../../../src/config';
import { loadBinding, loadedAddon } from '../../../src/native';
import { LLAMAD_ADDON_ABI } from '../../../src/native/addon-identity';

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

/** A JavaScript module standing in for an addon (`require` loads it as the addon would be): it reports `identity`. */
function standIn(name: string, identity: Record<string, unknown>): string {
  const path = join(dir, `${name}.js`);
  writeFileSync(path, `module.exports = ${JSON.stringify({ ...identity, systemInfo: 'stand-in' })};\n`);
  return path;
}

describe('loadBinding compares the loaded addon’s version and ABI with the JavaScript’s', () => {
  it('refuses an addon that reports another version, naming both and the rebuild', () => {
    const path = standIn('other-version', { version: '0.0.1-other', abi: LLAMAD_ADDON_ABI });
    assert.throws(
      () => loadBinding({ path, backend: 'cpu', origin: 'env' }),
      (err: unknown) =>
        err instanceof ModelLoadError &&
        err.message ===
          `native addon at ${path} (env) reports version 0.0.1-other, ABI ${LLAMAD_ADDON_ABI}, but this JavaScript ` +
            `is llamad ${OURS} (ABI ${LLAMAD_ADDON_ABI}): rebuild it with \`npx llamad build\` (\`npm run ` +
            'build:native` in a checkout), or reinstall llamad',
    );
    assert.equal(loadedAddon(), undefined, 'a refused addon is not the loaded one');
  });

  it('refuses an addon of this version with another ABI, and one that reports neither', () => {
    const path = standIn('other-abi', { version: OURS, abi: LLAMAD_ADDON_ABI + 1 });
    assert.throws(() => loadBinding({ path, backend: 'cpu', origin: 'source-build' }), ModelLoadError);
    const old = standIn('no-identity', {});
    assert.throws(
      () => loadBinding({ path: old, backend: 'cpu', origin: 'source-build' }),
      (err: unknown) => err instanceof ModelLoadError && err.message.includes('reports no version, no ABI'),
    );
  });

  // Last: a matching addon is cached for the rest of this process.
  it('loads an addon that reports this version and ABI', () => {
    const path = standIn('matching', { version: OURS, abi: LLAMAD_ADDON_ABI });
    const binding = loadBinding({ path, backend: 'cpu', origin: 'env' });
    assert.equal((binding as unknown as { systemInfo: string }).systemInfo, 'stand-in');
    assert.equal(loadedAddon()?.path, path);
  });
});
