#!/usr/bin/env node
// The `prepare` step of a checkout (`npm install` / `npm ci` at the repository root; npm never runs `prepare` for a
// package installed from the registry or a tarball, so the published package has no install script):
//   1. vendor/llama.cpp (fetch-llama-cpp.mjs) and the Node-API addon (build-native.mjs), built from source — skipped
//      when LLAMAD_ADDON names an existing llamad.node built elsewhere (the daemon then loads that one), and under
//      `npm pack` / `npm publish`, which only need the TypeScript output;
//   2. the TypeScript build, only in a checkout (src/ and tsconfig.json present): the package ships dist/.
// An installed package builds its addon with `npx llamad build` when no prebuilt package fits (docs/library.md).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function step(args) {
  const r = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: root });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

const prebuilt = process.env.LLAMAD_ADDON;
const packing = ['pack', 'publish'].includes(process.env.npm_command ?? '');
if (packing) {
  console.log(`install: npm ${process.env.npm_command}: not building the addon`);
} else if (prebuilt && existsSync(prebuilt)) {
  console.log(`install: LLAMAD_ADDON=${prebuilt} exists; not building the addon from source`);
} else {
  step([join(root, 'scripts', 'fetch-llama-cpp.mjs')]);
  step([join(root, 'scripts', 'build-native.mjs')]);
}
if (existsSync(join(root, 'src')) && existsSync(join(root, 'tsconfig.json'))) {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = spawnSync(npm, ['run', 'build'], { stdio: 'inherit', cwd: root });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
