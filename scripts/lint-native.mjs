#!/usr/bin/env node
// Checks the formatting of the native addon sources (native/*.h, native/*.cpp) with clang-format and the repository's
// .clang-format (Google style, 120 columns).
// Usage: node scripts/lint-native.mjs [--fix]
//   (default)  clang-format --dry-run --Werror: exits 1 and lists the files that are not formatted
//   --fix      formats the files in place
// When clang-format is not installed, prints a notice and exits 0 (install: apt-get install -y clang-format).
// $CLANG_FORMAT names another binary (e.g. clang-format-17).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const fix = process.argv.includes('--fix');
const binary = process.env.CLANG_FORMAT ?? 'clang-format';

const probe = spawnSync(binary, ['--version'], { encoding: 'utf8' });
if (probe.error || probe.status !== 0) {
  console.log(`lint-native: ${binary} not found, skipping the native format check (apt-get install -y clang-format)`);
  process.exit(0);
}

const dir = join(root, 'native');
const files = readdirSync(dir)
  .filter((name) => /\.(h|cpp)$/.test(name))
  .sort()
  .map((name) => join(dir, name));
if (files.length === 0) {
  console.log('lint-native: no native sources');
  process.exit(0);
}

const args = fix ? ['-i', '--style=file', ...files] : ['--dry-run', '--Werror', '--style=file', ...files];
const r = spawnSync(binary, args, { cwd: root, encoding: 'utf8' });
if (r.error) {
  console.error(`lint-native: ${r.error.message}`);
  process.exit(1);
}
if (r.status !== 0) {
  const output = `${r.stdout}${r.stderr}`;
  const bad = [...new Set([...output.matchAll(/^(.*?\.(?:h|cpp)):\d+:\d+: (?:error|warning)/gm)].map((m) => m[1]))];
  process.stderr.write(output.split('\n').slice(0, 40).join('\n') + '\n');
  console.error(
    `lint-native: ${bad.length || 'some'} file(s) not clang-formatted: ${bad.map((f) => relative(root, f)).join(', ')}` +
      '\nrun `node scripts/lint-native.mjs --fix`',
  );
  process.exit(1);
}
console.log(`lint-native: ${files.length} file(s) ${fix ? 'formatted' : 'clean'} (${probe.stdout.trim()})`);
