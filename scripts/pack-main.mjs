#!/usr/bin/env node
// Packs the main package (`llamad-<version>.tgz`) from this checkout's TypeScript output, with a manifest that has no
// install-time lifecycle script (docs/library.md "Prebuilt addons", docs/security.md "Native code"): the checkout's
// `prepare` (node scripts/install.mjs) builds the addon from source in a clone, but in the published manifest npm 11
// would list it among the "install scripts not yet covered by allowScripts" of every project that installs llamad.
//
// How: `npm pack --dry-run --json` names exactly the files npm would pack (the `files` field, README, LICENSE,
// package.json); they are copied into a staging folder, the staged package.json loses its lifecycle scripts, and
// `npm pack --ignore-scripts` packs the staging folder. The checkout's own package.json is never touched, so a
// failed pack leaves nothing to restore (unlike a prepack/postpack pair).
// Usage: node scripts/pack-main.mjs [--out DIR]   (needs `npm run build` first: dist/ is what is packed)
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/**
 * The npm lifecycle scripts that run when a package is installed, from a registry, a tarball or git (npm docs,
 * "scripts": preinstall/install/postinstall, prepare and its pre/post, and the deprecated prepublish that old npm ran
 * on install). npm 11 asks to approve a dependency that has any of them.
 */
export const INSTALL_SCRIPTS = [
  'preinstall',
  'install',
  'postinstall',
  'prepublish',
  'preprepare',
  'prepare',
  'postprepare',
];

/**
 * The manifest to publish: `manifest` without the install-time lifecycle scripts ({@link INSTALL_SCRIPTS}); the
 * other scripts stay (they only run when asked for). `scripts` is dropped when nothing is left in it.
 * @param {Record<string, unknown>} manifest a parsed package.json
 * @returns {Record<string, unknown>} a new object; `manifest` is not changed
 */
export function publishedManifest(manifest) {
  const out = { ...manifest };
  if (manifest.scripts && typeof manifest.scripts === 'object') {
    const scripts = Object.fromEntries(
      Object.entries(manifest.scripts).filter(([name]) => !INSTALL_SCRIPTS.includes(name)),
    );
    if (Object.keys(scripts).length > 0) out.scripts = scripts;
    else delete out.scripts;
  }
  return out;
}

/**
 * @param {string[]} args
 * @param {string} cwd
 * @returns {string} stdout
 */
function npmJson(args, cwd) {
  const r = spawnSync(npm, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed in ${cwd}:\n${r.stderr}`);
  return r.stdout.slice(r.stdout.indexOf('['));
}

/**
 * Packs the main package of the checkout at `from` into `out` with {@link publishedManifest}'s manifest.
 * @param {string} out the destination folder (created when missing)
 * @param {string} [from] the package root (default: this checkout)
 * @returns {string} the tarball's path
 * @throws Error when npm fails (its stderr in the message)
 */
export function packMain(out, from = root) {
  mkdirSync(out, { recursive: true });
  const [{ files }] = JSON.parse(npmJson(['pack', '--dry-run', '--json', '--ignore-scripts'], from));
  const stage = mkdtempSync(join(tmpdir(), 'llamad-pack-'));
  try {
    for (const { path } of files) {
      mkdirSync(dirname(join(stage, path)), { recursive: true });
      copyFileSync(join(from, path), join(stage, path));
    }
    const manifest = JSON.parse(readFileSync(join(from, 'package.json'), 'utf8'));
    writeFileSync(join(stage, 'package.json'), `${JSON.stringify(publishedManifest(manifest), null, 2)}\n`);
    const [{ filename }] = JSON.parse(
      npmJson(['pack', '--json', '--ignore-scripts', '--pack-destination', out], stage),
    );
    return join(out, filename);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: join(root, 'build', 'packages') } } });
  console.log(`pack-main: ${packMain(resolve(values.out))}`);
}
