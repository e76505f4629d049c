#!/usr/bin/env node
// Install step for vendor/llama.cpp: unpack the pinned llama.cpp tree from the git bundle carried inside the
// node-llama-cpp npm package, verify the commit, apply vendor/patches/*.patch, and move it into place atomically.
// The pin lives in vendor/llama.cpp.json (the only place). See vendor/README.md for the bump checklist.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const vendorDir = join(root, 'vendor');
const target = join(vendorDir, 'llama.cpp');
const pin = JSON.parse(readFileSync(join(vendorDir, 'llama.cpp.json'), 'utf8'));
const patchDir = join(vendorDir, 'patches');
// The stamp lives inside the checkout's .git, so `git status` in vendor/llama.cpp shows only the applied patches.
const stampFile = join('.git', 'vendor-stamp');

function run(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...opts }).trim();
}

function fail(msg) {
  console.error(`fetch-llama-cpp: ${msg}`);
  process.exit(1);
}

function patches() {
  if (!existsSync(patchDir)) return [];
  return readdirSync(patchDir)
    .filter((f) => f.endsWith('.patch'))
    .sort()
    .map((f) => join(patchDir, f));
}

/** Hash of the pin and the patch series: the stamp that says the tree in place is current. */
function expectedStamp() {
  const h = createHash('sha256');
  h.update(pin.commit);
  for (const p of patches()) h.update(readFileSync(p));
  return h.digest('hex');
}

function isCurrent() {
  if (!existsSync(join(target, '.git'))) return false;
  try {
    const head = run('git', ['-C', target, 'rev-parse', 'HEAD']);
    const stamp = readFileSync(join(target, stampFile), 'utf8').trim();
    return head === pin.commit && stamp === expectedStamp();
  } catch {
    return false;
  }
}

function applyPatches(dir) {
  for (const p of patches()) {
    try {
      run('git', ['-C', dir, 'apply', '--check', p]);
      run('git', ['-C', dir, 'apply', p]);
      console.log(`fetch-llama-cpp: applied ${p.slice(root.length + 1)}`);
    } catch {
      try {
        run('git', ['-C', dir, 'apply', '--reverse', '--check', p]);
        console.log(`fetch-llama-cpp: already applied ${p.slice(root.length + 1)}`);
      } catch {
        fail(`patch ${p} does not apply to llama.cpp ${pin.commit}`);
      }
    }
  }
}

if (isCurrent()) {
  console.log(`fetch-llama-cpp: vendor/llama.cpp is at ${pin.commit}, nothing to do`);
  process.exit(0);
}

const work = mkdtempSync(join(tmpdir(), 'llama-cpp-fetch-'));
try {
  const spec = `${pin.package}@${pin.version}`;
  console.log(`fetch-llama-cpp: npm pack ${spec} (tarball only, no install scripts)`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  run(npm, ['pack', spec, '--silent', '--pack-destination', work], { cwd: work });
  const tgz = readdirSync(work).find((f) => f.endsWith('.tgz'));
  if (!tgz) fail(`npm pack ${spec} produced no tarball`);
  run('tar', ['-xzf', join(work, tgz), '-C', work, pin.bundle]);
  const bundle = join(work, pin.bundle);

  const heads = run('git', ['bundle', 'list-heads', bundle]);
  if (!heads.split('\n').some((l) => l.startsWith(pin.commit))) {
    fail(`bundle in ${spec} does not carry the pinned commit ${pin.commit}; it has:\n${heads}`);
  }
  const tmpTree = join(vendorDir, `.llama.cpp.tmp-${process.pid}`);
  rmSync(tmpTree, { recursive: true, force: true });
  run('git', ['clone', '--quiet', bundle, tmpTree]);
  const head = run('git', ['-C', tmpTree, 'rev-parse', 'HEAD']);
  if (head !== pin.commit) fail(`cloned HEAD is ${head}, expected the pinned ${pin.commit}`);
  run('git', ['-C', tmpTree, 'checkout', '--quiet', '--detach', pin.commit]);
  applyPatches(tmpTree);
  writeFileSync(join(tmpTree, stampFile), `${expectedStamp()}\n`);
  rmSync(target, { recursive: true, force: true });
  renameSync(tmpTree, target);
  console.log(`fetch-llama-cpp: vendor/llama.cpp ready at ${pin.commit}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
