import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { importScript } from '../../utils/esm';

interface PackMainModule {
  INSTALL_SCRIPTS: string[];
  publishedManifest(manifest: Record<string, unknown>): Record<string, unknown>;
  packMain(out: string, from?: string): string;
}

let pack: PackMainModule;
let dir: string;

/** One file of a tarball, as text (tar -xzOf). */
function tarFile(tarball: string, path: string): string {
  const r = spawnSync('tar', ['-xzOf', tarball, path], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

/** The paths of a tarball's entries. */
function tarList(tarball: string): string[] {
  const r = spawnSync('tar', ['-tzf', tarball], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter(Boolean).sort();
}

// Issue 32: npm 11 listed `llamad@0.1.0 (prepare: node scripts/install.mjs)` among the install scripts to approve,
// because the packed manifest kept the checkout's `prepare`.
describe('scripts/pack-main.mjs', () => {
  before(async () => {
    pack = await importScript<PackMainModule>('pack-main.mjs');
    dir = mkdtempSync(join(tmpdir(), 'llamad-pack-test-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('drops every install-time lifecycle script and keeps the others, without changing its input', () => {
    const scripts = Object.fromEntries(pack.INSTALL_SCRIPTS.map((s) => [s, `echo ${s}`]));
    const input = { name: 'x', version: '1.0.0', scripts: { ...scripts, build: 'tsc', test: 'node t.js' } };
    const out = pack.publishedManifest(input);
    assert.deepEqual(out, { name: 'x', version: '1.0.0', scripts: { build: 'tsc', test: 'node t.js' } });
    assert.deepEqual(Object.keys(input.scripts).length, pack.INSTALL_SCRIPTS.length + 2);
    assert.deepEqual(pack.publishedManifest({ name: 'y', scripts: { prepare: 'x' } }), { name: 'y' });
    for (const name of ['prepare', 'install', 'postinstall', 'preinstall']) {
      assert.ok(pack.INSTALL_SCRIPTS.includes(name));
    }
  });

  it('packs exactly the files npm would pack, with the stripped manifest', () => {
    const pkg = join(dir, 'pkg');
    mkdirSync(join(pkg, 'dist', 'sub'), { recursive: true });
    mkdirSync(join(pkg, 'src'), { recursive: true });
    writeFileSync(join(pkg, 'dist', 'a.js'), 'module.exports = 1;\n');
    writeFileSync(join(pkg, 'dist', 'sub', 'b.js'), 'module.exports = 2;\n');
    writeFileSync(join(pkg, 'src', 'a.ts'), 'export = 1;\n');
    writeFileSync(join(pkg, 'README.md'), '# pkg\n');
    const manifest = {
      name: 'pkg',
      version: '1.2.3',
      files: ['dist/'],
      scripts: { prepare: 'node -e "process.exit(1)"', postinstall: 'exit 1', start: 'node dist/a.js' },
    };
    writeFileSync(join(pkg, 'package.json'), JSON.stringify(manifest));
    const tarball = pack.packMain(join(dir, 'out'), pkg);
    assert.equal(basename(tarball), 'pkg-1.2.3.tgz');
    assert.deepEqual(tarList(tarball), [
      'package/README.md',
      'package/dist/a.js',
      'package/dist/sub/b.js',
      'package/package.json',
    ]);
    const packed = JSON.parse(tarFile(tarball, 'package/package.json')) as Record<string, unknown>;
    assert.deepEqual(packed.scripts, { start: 'node dist/a.js' });
    assert.deepEqual(packed.files, ['dist/']);
  });

  it("packs this checkout's main package without prepare/install scripts", () => {
    const tarball = pack.packMain(join(dir, 'main'));
    const packed = JSON.parse(tarFile(tarball, 'package/package.json')) as {
      name: string;
      scripts?: Record<string, string>;
      bin?: Record<string, string>;
    };
    assert.equal(packed.name, 'llamad');
    const lifecycle = Object.keys(packed.scripts ?? {}).filter((s) => pack.INSTALL_SCRIPTS.includes(s));
    assert.deepEqual(lifecycle, []);
    const entries = tarList(tarball);
    assert.ok(entries.includes('package/dist/src/index.js'), 'the TypeScript output is packed');
    assert.ok(entries.includes(`package/${packed.bin?.llamad ?? 'missing bin'}`), 'the CLI is packed');
    assert.ok(!entries.some((e) => e.startsWith('package/src/')), 'no TypeScript sources');
  });
});
