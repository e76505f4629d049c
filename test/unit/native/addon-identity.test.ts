import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../../../src/config';
import type { AddonCandidate } from '../../../src/native/addon-candidates';
import { addonIdentityMismatch, LLAMAD_ADDON_ABI } from '../../../src/native/addon-identity';

const SOURCE: AddonCandidate = { path: '/x/build/cpu/Release/llamad.node', backend: 'cpu', origin: 'source-build' };
const PACKAGE: AddonCandidate = {
  path: '/h/node_modules/@llamad/linux-x64/bin/llamad.node',
  backend: 'cpu',
  origin: 'package',
  packageName: '@llamad/linux-x64',
};
const EXPECTED = { version: '1.2.3', abi: 7 };

describe('the addon ABI number', () => {
  it('native/addon_abi.h defines the same LLAMAD_ADDON_ABI as the TypeScript', () => {
    const header = readFileSync(join(REPO_ROOT, 'native', 'addon_abi.h'), 'utf8');
    const defined = /^#define LLAMAD_ADDON_ABI (\d+)$/m.exec(header);
    assert.ok(defined, 'native/addon_abi.h has no `#define LLAMAD_ADDON_ABI <integer>` line');
    assert.equal(Number(defined[1]), LLAMAD_ADDON_ABI);
    assert.ok(Number.isInteger(LLAMAD_ADDON_ABI) && LLAMAD_ADDON_ABI > 0);
  });
});

describe('addonIdentityMismatch', () => {
  it('accepts an addon that reports this version and ABI', () => {
    assert.equal(addonIdentityMismatch(SOURCE, { version: '1.2.3', abi: 7 }, EXPECTED), undefined);
    assert.equal(addonIdentityMismatch(PACKAGE, { version: '1.2.3', abi: 7 }, EXPECTED), undefined);
  });

  it('refuses another version, naming the addon, both versions and ABIs, and the rebuild', () => {
    assert.equal(
      addonIdentityMismatch(SOURCE, { version: '1.2.2', abi: 7 }, EXPECTED),
      'native addon at /x/build/cpu/Release/llamad.node (source-build) reports version 1.2.2, ABI 7, but this ' +
        'JavaScript is llamad 1.2.3 (ABI 7): rebuild it with `npx llamad build` (`npm run build:native` in a ' +
        'checkout), or reinstall llamad',
    );
  });

  it('refuses the same version with another ABI (binding.d.ts changed, the addon was not rebuilt)', () => {
    const message = addonIdentityMismatch({ ...SOURCE, origin: 'env' }, { version: '1.2.3', abi: 6 }, EXPECTED) ?? '';
    assert.ok(message.includes('(env) reports version 1.2.3, ABI 6, but this JavaScript is llamad 1.2.3 (ABI 7)'));
    assert.ok(message.includes('npx llamad build'));
  });

  it('refuses an addon built before it exported its identity', () => {
    const message = addonIdentityMismatch(SOURCE, {}, EXPECTED);
    assert.ok(message?.includes('reports no version, no ABI, but this JavaScript is llamad 1.2.3 (ABI 7)'), message);
  });

  it('refuses values of the wrong type rather than coercing them', () => {
    assert.ok(addonIdentityMismatch(SOURCE, { version: '1.2.3', abi: '7' }, EXPECTED));
    assert.ok(addonIdentityMismatch(SOURCE, { version: 123, abi: 7 }, { version: '123', abi: 7 }));
  });

  it('for a prebuilt package, names the package to install at this version, or the source build', () => {
    const message = addonIdentityMismatch(PACKAGE, { version: '1.0.0', abi: 7 }, EXPECTED) ?? '';
    assert.ok(message.includes('(prebuilt package @llamad/linux-x64) reports version 1.0.0'), message);
    assert.ok(message.includes('`npm install @llamad/linux-x64@1.2.3`'));
    assert.ok(message.includes('`npx llamad build`'));
  });

  it('compares only the ABI when llamad’s own version cannot be read', () => {
    assert.equal(
      addonIdentityMismatch(SOURCE, { version: '9.9.9', abi: 7 }, { version: undefined, abi: 7 }),
      undefined,
    );
    assert.ok(addonIdentityMismatch(SOURCE, { version: '9.9.9', abi: 8 }, { version: undefined, abi: 7 }));
  });

  it('is one line', () => {
    assert.ok(!addonIdentityMismatch(PACKAGE, {}, EXPECTED)?.includes('\n'));
  });
});
