#!/usr/bin/env node
// Builds llama.cpp's own llama-server from the same vendored tree, with the same ggml flags as the addon
// (native-flags.mjs: backend, GGML_NATIVE, OpenMP off, static libraries), into build/llama-server-<backend>[-native]/.
// It is the yardstick of `npm run bench` (docs/benchmarks.md); the daemon never runs it.
// Prints the binary's path on the last line. Skips the build when the binary exists (LLAMAD_REBUILD_SERVER=1 forces).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nativeFlags } from './native-flags.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { backend, defines } = nativeFlags();
const src = join(root, 'vendor', 'llama.cpp');
const out = join(root, 'build', `llama-server-${backend}${defines.GGML_NATIVE === 'ON' ? '-native' : ''}`);
const bin = join(out, 'bin', 'llama-server');

function run(cmd, args) {
  const r = spawnSync(cmd, args, {
    stdio: ['ignore', 'inherit', 'inherit'],
    cwd: root,
    env: { ...process.env, CCACHE_BASEDIR: process.env.CCACHE_BASEDIR ?? root },
  });
  if (r.status !== 0) {
    console.error(`build-llama-server: ${cmd} ${args.join(' ')} failed (${r.status ?? r.signal})`);
    process.exit(1);
  }
}

if (!existsSync(join(src, 'CMakeLists.txt'))) {
  console.error('build-llama-server: vendor/llama.cpp is missing: run `npm install` first');
  process.exit(1);
}
if (!existsSync(bin) || process.env.LLAMAD_REBUILD_SERVER === '1') {
  const serverDefines = {
    ...defines,
    BUILD_SHARED_LIBS: 'OFF',
    LLAMA_BUILD_COMMON: 'ON',
    LLAMA_BUILD_TOOLS: 'ON',
    LLAMA_BUILD_SERVER: 'ON',
    LLAMA_BUILD_EXAMPLES: 'OFF',
    LLAMA_BUILD_TESTS: 'OFF',
    LLAMA_BUILD_APP: 'OFF',
    LLAMA_BUILD_UI: 'OFF',
    LLAMA_USE_PREBUILT_UI: 'OFF',
    LLAMA_OPENSSL: 'OFF',
    GGML_BACKEND_DL: 'OFF',
  };
  console.error(`build-llama-server: configuring ${out} (backend=${backend})`);
  run('cmake', [
    '-S',
    src,
    '-B',
    out,
    ...(spawnSync('ninja', ['--version']).status === 0 ? ['-G', 'Ninja'] : []),
    ...Object.entries(serverDefines).map(([k, v]) => `-D${k}=${v}`),
  ]);
  const jobs = process.env.LLAMAD_JOBS ?? String(Math.max(1, availableParallelism()));
  run('cmake', ['--build', out, '--target', 'llama-server', '--parallel', jobs]);
}
console.log(bin);
