import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  addonCandidates,
  type AddonHost,
  addonVersionMismatch,
  backendUsable,
  chooseAddon,
  missingAddonMessage,
  prebuiltPackageName,
} from '../../../src/native/addon-candidates';
import { importScript } from '../../utils/esm';

const ROOT = '/pkg/llamad';

/**
 * A host whose file system holds `files` (and `texts`, path → content) and whose node_modules holds `packages`
 * (name → folder).
 */
function host(
  files: string[],
  packages: Record<string, string> = {},
  env: NodeJS.ProcessEnv = {},
  texts: Record<string, string> = {},
): AddonHost {
  const set = new Set([...files, ...Object.keys(texts)]);
  return {
    platform: 'linux',
    arch: 'x64',
    env,
    root: ROOT,
    exists: (p) => set.has(p),
    resolvePackage: (name) => packages[name],
    readText: (p) => texts[p],
  };
}

const CPU_PKG = '/host/node_modules/@llamad/linux-x64';
const CUDA_PKG = '/host/node_modules/@llamad/linux-x64-cuda';
const SOURCE_CPU = `${ROOT}/build/cpu/Release/llamad.node`;

describe('addon candidates (prebuilt packages and source builds)', () => {
  it('names the packages per platform and backend', () => {
    assert.equal(prebuiltPackageName('linux', 'x64', 'cpu'), '@llamad/linux-x64');
    assert.equal(prebuiltPackageName('linux', 'x64', 'cuda'), '@llamad/linux-x64-cuda');
    assert.equal(prebuiltPackageName('win32', 'x64', 'vulkan'), '@llamad/win32-x64-vulkan');
    assert.equal(prebuiltPackageName('darwin', 'arm64', 'metal'), '@llamad/darwin-arm64');
  });

  it('agrees with the packing script on package names', async () => {
    const script = await importScript<{
      packageName(p: string, a: string, b: string): string;
      isPackagedFile(name: string): boolean;
    }>('pack-prebuilt.mjs');
    for (const [p, a] of [
      ['linux', 'x64'],
      ['linux', 'arm64'],
      ['darwin', 'arm64'],
      ['win32', 'x64'],
    ]) {
      for (const b of ['cpu', 'cuda', 'vulkan', 'metal'] as const) {
        assert.equal(script.packageName(p, a, b), prebuiltPackageName(p, a, b));
      }
    }
    for (const f of ['llamad.node', 'rpc-server', 'libggml-cpu-haswell.so', 'libllama.so', 'libgomp.so.1']) {
      assert.ok(script.isPackagedFile(f), f);
    }
    for (const f of ['CMakeCache.txt', 'libggml-base.a', 'llamad.exp']) assert.ok(!script.isPackagedFile(f), f);
  });

  it('uses the installed prebuilt package when nothing was built here', () => {
    const h = host([`${CPU_PKG}/bin/llamad.node`], { '@llamad/linux-x64': CPU_PKG });
    const chosen = chooseAddon(h);
    assert.deepEqual(chosen, {
      path: `${CPU_PKG}/bin/llamad.node`,
      backend: 'cpu',
      origin: 'package',
      packageName: '@llamad/linux-x64',
    });
  });

  it('prefers a from-source build of the same backend over the package', () => {
    const h = host([SOURCE_CPU, `${CPU_PKG}/bin/llamad.node`], { '@llamad/linux-x64': CPU_PKG });
    assert.equal(chooseAddon(h)?.path, SOURCE_CPU);
    assert.deepEqual(
      addonCandidates(h).map((c) => c.origin),
      ['source-build', 'package'],
    );
  });

  it('takes the CUDA package only where NVIDIA’s driver is present', () => {
    const files = [`${CPU_PKG}/bin/llamad.node`, `${CUDA_PKG}/bin/llamad.node`];
    const pkgs = { '@llamad/linux-x64': CPU_PKG, '@llamad/linux-x64-cuda': CUDA_PKG };
    assert.equal(chooseAddon(host(files, pkgs))?.backend, 'cpu');
    assert.equal(chooseAddon(host([...files, '/proc/driver/nvidia/version'], pkgs))?.backend, 'cuda');
    assert.equal(chooseAddon(host([...files, '/usr/lib/x86_64-linux-gnu/libcuda.so.1'], pkgs))?.backend, 'cuda');
  });

  it('LLAMAD_BACKEND keeps one backend and skips the usability check', () => {
    const files = [`${CPU_PKG}/bin/llamad.node`, `${CUDA_PKG}/bin/llamad.node`, '/proc/driver/nvidia/version'];
    const pkgs = { '@llamad/linux-x64': CPU_PKG, '@llamad/linux-x64-cuda': CUDA_PKG };
    assert.equal(chooseAddon(host(files, pkgs, { LLAMAD_BACKEND: 'cpu' }))?.backend, 'cpu');
    assert.equal(chooseAddon(host(files.slice(0, 2), pkgs, { LLAMAD_BACKEND: 'CUDA' }))?.backend, 'cuda');
    assert.equal(chooseAddon(host(files, pkgs, { LLAMAD_BACKEND: 'vulkan' })), null);
    assert.throws(() => chooseAddon(host(files, pkgs, { LLAMAD_BACKEND: 'rocm' })), /not a backend/);
  });

  it('LLAMAD_ADDON wins, and names a missing file as missing', () => {
    const h = host(
      ['/opt/x/build/vulkan/Release/llamad.node', SOURCE_CPU],
      {},
      {
        LLAMAD_ADDON: '/opt/x/build/vulkan/Release/llamad.node',
      },
    );
    assert.deepEqual(chooseAddon(h), {
      path: '/opt/x/build/vulkan/Release/llamad.node',
      backend: 'vulkan',
      origin: 'env',
    });
    const gone = host([SOURCE_CPU], {}, { LLAMAD_ADDON: '/nowhere/llamad.node' });
    assert.equal(chooseAddon(gone), null);
    assert.match(missingAddonMessage(gone), /LLAMAD_ADDON=\/nowhere\/llamad.node does not exist/);
  });

  it('says in one line what to install or build when there is nothing', () => {
    const message = missingAddonMessage(host([]));
    assert.equal(chooseAddon(host([])), null);
    assert.ok(!message.includes('\n'));
    assert.match(message, /npm install @llamad\/linux-x64`/);
    assert.match(message, /npx llamad build/);
    assert.match(missingAddonMessage(host([], {}, { LLAMAD_BACKEND: 'cuda' })), /@llamad\/linux-x64-cuda/);
  });

  it('finds Vulkan through its loader library and Metal only on macOS', () => {
    assert.ok(!backendUsable(host([]), 'vulkan'));
    assert.ok(backendUsable(host(['/usr/lib/x86_64-linux-gnu/libvulkan.so.1']), 'vulkan'));
    assert.ok(backendUsable(host(['/opt/vk/libvulkan.so.1'], {}, { LD_LIBRARY_PATH: '/opt/vk' }), 'vulkan'));
    assert.ok(!backendUsable(host([]), 'metal'));
    assert.ok(backendUsable({ ...host([]), platform: 'darwin' }, 'metal'));
  });

  it("passes a prebuilt package of llamad's version and names both versions and the fix on a mismatch", () => {
    const addon = `${CPU_PKG}/bin/llamad.node`;
    const ours = { [`${ROOT}/package.json`]: JSON.stringify({ name: 'llamad', version: '0.3.0' }) };
    const pkg = (version: string) => ({ [`${CPU_PKG}/package.json`]: JSON.stringify({ name: 'x', version }) });
    const files = [addon];
    const packages = { '@llamad/linux-x64': CPU_PKG };
    const chosen = chooseAddon(host(files, packages, {}, { ...ours, ...pkg('0.3.0') }));
    assert.equal(chosen?.origin, 'package');
    assert.equal(addonVersionMismatch(host(files, packages, {}, { ...ours, ...pkg('0.3.0') }), chosen!), undefined);

    const message = addonVersionMismatch(host(files, packages, {}, { ...ours, ...pkg('0.2.9') }), chosen!);
    assert.ok(message && !message.includes('\n'));
    assert.match(message, /@llamad\/linux-x64@0\.2\.9 at .*llamad\.node does not match llamad 0\.3\.0/);
    assert.match(message, /npm install @llamad\/linux-x64@0\.3\.0/);
    assert.match(message, /npx llamad build/);
    // A package.json without a version is a mismatch too.
    const bare = { [`${CPU_PKG}/package.json`]: '{"name":"x"}' };
    assert.match(addonVersionMismatch(host(files, packages, {}, { ...ours, ...bare }), chosen!) ?? '', /no version/);
  });

  it('does not check source builds and LLAMAD_ADDON against the package version', () => {
    const texts = { [`${ROOT}/package.json`]: '{"version":"0.3.0"}' };
    const source = chooseAddon(host([SOURCE_CPU], {}, {}, texts));
    assert.equal(source?.origin, 'source-build');
    assert.equal(addonVersionMismatch(host([SOURCE_CPU], {}, {}, texts), source!), undefined);
    const env = { origin: 'env' as const, path: '/opt/llamad.node', backend: 'cpu' as const };
    assert.equal(addonVersionMismatch(host([], {}, {}, texts), env), undefined);
  });
});
