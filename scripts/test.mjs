#!/usr/bin/env node
// Runs the test tiers with node's own test runner over the compiled output in dist/.
// Usage: node scripts/test.mjs [unit|native|e2e|all] [extra node --test flags]
// Test files are dist/test/<tier>/**/*.test.js (compiled from test/<tier>/**/*.test.ts).
// The native and e2e tiers need the built addon and the generated test models (made here when missing).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const tier = process.argv[2] ?? 'all';
const extra = process.argv.slice(3);
const tiers = tier === 'all' ? ['unit', 'native', 'e2e'] : [tier];

function collect(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...collect(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

if (tiers.some((t) => t !== 'unit')) {
  const r = spawnSync(process.execPath, [join(root, 'dist', 'scripts', 'make-test-models.js')], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

const files = tiers.flatMap((t) => collect(join(root, 'dist', 'test', t)));
if (files.length === 0) {
  console.error(`test: no test files found for ${tiers.join(', ')} (did \`npm run build\` run?)`);
  process.exit(1);
}
// One file at a time: native and e2e tests load models, and the machine has 2 cores.
// TAP on stdout as the tests run (node's spec reporter in a terminal); the failures again at the very end
// (scripts/test-failures-reporter.mjs), on stderr.
const reporters = [
  `--test-reporter=${process.stdout.isTTY ? 'spec' : 'tap'}`,
  '--test-reporter-destination=stdout',
  `--test-reporter=${join(root, 'scripts', 'test-failures-reporter.mjs')}`,
  '--test-reporter-destination=stderr',
];
const r = spawnSync(
  process.execPath,
  ['--test', '--test-concurrency=1', '--test-timeout=300000', ...reporters, ...extra, ...files],
  {
    stdio: 'inherit',
    cwd: root,
  },
);
process.exit(r.status ?? 1);
