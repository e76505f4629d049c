#!/usr/bin/env node
// Builds the Node-API addon (native/) together with the vendored llama.cpp through cmake-js.
//
// Backend and CPU switches (LLAMAD_BACKEND, LLAMAD_PREBUILT, LLAMAD_PORTABLE, LLAMAD_OPENMP, LLAMAD_CUDA_ARCHS, LLAMAD_BUILD_TYPE): see
// native-flags.mjs. A GPU backend whose tool chain is missing stops here with what to install, before CMake runs.
// ccache is used when it is on the PATH (ggml's GGML_CCACHE).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDirName, missingToolchain, nativeFlags } from './native-flags.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
let backend, defines;
try {
  ({ backend, defines } = nativeFlags());
} catch (e) {
  console.error(`build-native: ${e.message}`);
  process.exit(1);
}
const missing = missingToolchain(backend, process.env);
if (missing) {
  console.error(`build-native: ${missing}`);
  process.exit(1);
}
const jobs = process.env.LLAMAD_JOBS ?? String(Math.max(1, (await import('node:os')).availableParallelism()));
// Resolved like any dependency: in an installed copy (node_modules/llamad) they are usually hoisted next to it.
const require = createRequire(join(root, 'package.json'));
const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
defines.NODE_ADDON_API_DIR = dirname(require.resolve('node-addon-api/package.json'));
const common = ['--directory', root, '--out', join(root, 'build', buildDirName(backend))];
const generator = spawnSync('ninja', ['--version']).status === 0 ? ['-G', 'Ninja'] : [];
console.log(
  `build-native: backend=${backend} ${Object.entries(defines)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ')}`,
);
// Paths under the repository become relative in ccache's hashes, so any clone of the repo reuses the same cache.
const env = { ...process.env, CCACHE_BASEDIR: process.env.CCACHE_BASEDIR ?? root };
// Configure every time (seconds on an existing tree): `cmake-js compile` alone reuses an existing build directory's
// cache and would silently ignore a changed switch such as LLAMAD_NATIVE.
const steps = [
  ['configure', ...common, ...generator, ...Object.entries(defines).map(([k, v]) => `--CD${k}=${v}`)],
  ['build', ...common, '--parallel', jobs],
];
for (const step of steps) {
  const r = spawnSync(process.execPath, [cmakeJs, ...step], { stdio: 'inherit', cwd: root, env });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
