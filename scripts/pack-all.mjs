#!/usr/bin/env node
// `npm run pack:all`: every package of a release into build/packages (docs/library.md "Prebuilt addons"):
//   - llamad-<version>.tgz, the main package (TypeScript output after `npm run build`; packed by pack-main.mjs from
//     a staging copy whose manifest has no install-time lifecycle script, so npm 11 has nothing of llamad's to
//     approve);
//   - one prebuilt addon package per backend whose tool chain is here (scripts/pack-prebuilt.mjs): the CPU always,
//     CUDA when nvcc and cuBLAS are found, Vulkan when a new-enough glslc is, Metal on macOS. A backend that cannot
//     be built is reported with the reason and skipped.
// Usage: node scripts/pack-all.mjs [--backends cpu,cuda,vulkan] [--out DIR]
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { missingToolchain } from './native-flags.mjs';
import { packMain } from './pack-main.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const { values } = parseArgs({
  options: {
    backends: { type: 'string', default: process.platform === 'darwin' ? 'metal' : 'cpu,cuda,vulkan' },
    out: { type: 'string', default: join(root, 'build', 'packages') },
  },
});
const out = resolve(values.out);
mkdirSync(out, { recursive: true });

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

run(npm, ['run', 'build']);
console.log(`pack:all: ${packMain(out)}`);
const skipped = [];
for (const backend of values.backends
  .split(',')
  .map((b) => b.trim())
  .filter(Boolean)) {
  const missing = missingToolchain(backend, process.env);
  if (missing) {
    skipped.push(`${backend}: ${missing}`);
    continue;
  }
  run(process.execPath, [join(root, 'scripts', 'pack-prebuilt.mjs'), '--backend', backend, '--out', out]);
}
for (const line of skipped) console.log(`pack:all: skipped ${line}`);
