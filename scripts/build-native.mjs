#!/usr/bin/env node
// Builds the Node-API addon (native/) together with the vendored llama.cpp through cmake-js.
//
// Backend switch: LLAMAD_BACKEND=cpu (default) | cuda | vulkan | metal. CPU is always built.
// LLAMAD_NATIVE=1 compiles for this machine's CPU (-march=native); the default is a portable x86-64 build with
// AVX2/FMA/F16C (ggml's non-native instruction set defaults). LLAMAD_CUDA_ARCHS sets CMAKE_CUDA_ARCHITECTURES
// (default: "native" when a GPU is visible, else ggml's list). LLAMAD_BUILD_TYPE=Release|Debug (default Release).
// ccache is used when it is on the PATH (ggml's GGML_CCACHE).
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const backend = (process.env.LLAMAD_BACKEND ?? 'cpu').toLowerCase();
const defines = {
  CMAKE_BUILD_TYPE: process.env.LLAMAD_BUILD_TYPE ?? 'Release',
  GGML_NATIVE: process.env.LLAMAD_NATIVE === '1' ? 'ON' : 'OFF',
  GGML_CUDA: 'OFF',
  GGML_VULKAN: 'OFF',
  GGML_METAL: 'OFF',
};
switch (backend) {
  case 'cpu':
    break;
  case 'cuda':
    defines.GGML_CUDA = 'ON';
    if (process.env.LLAMAD_CUDA_ARCHS) defines.CMAKE_CUDA_ARCHITECTURES = process.env.LLAMAD_CUDA_ARCHS;
    break;
  case 'vulkan':
    defines.GGML_VULKAN = 'ON';
    break;
  case 'metal':
    defines.GGML_METAL = 'ON';
    break;
  default:
    console.error(`build-native: unknown LLAMAD_BACKEND "${backend}" (expected cpu, cuda, vulkan or metal)`);
    process.exit(1);
}
const jobs = process.env.LLAMAD_JOBS ?? String(Math.max(1, (await import('node:os')).availableParallelism()));
const args = [
  join(root, 'node_modules', 'cmake-js', 'bin', 'cmake-js'),
  'compile',
  '--directory',
  root,
  '--out',
  join(root, 'build', backend),
  '--parallel',
  jobs,
  ...(spawnSync('ninja', ['--version']).status === 0 ? ['-G', 'Ninja'] : []),
  ...Object.entries(defines).map(([k, v]) => `--CD${k}=${v}`),
];
console.log(
  `build-native: backend=${backend} ${Object.entries(defines)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ')}`,
);
// Paths under the repository become relative in ccache's hashes, so any clone of the repo reuses the same cache.
const env = { ...process.env, CCACHE_BASEDIR: process.env.CCACHE_BASEDIR ?? root };
const r = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: root, env });
process.exit(r.status ?? 1);
