#!/usr/bin/env node
// Builds llama.cpp's own llama-server from the vendored tree: the yardsticks of `npm run bench` (docs/benchmarks.md);
// the daemon never runs them. Two flavours:
//
//   (default)    the addon's ggml flags (native-flags.mjs: backend, GGML_NATIVE, OpenMP, static libraries), into
//                build/llama-server-<backend>[-native|-portable][-noomp]/ — "same flags";
//   --defaults   as a user builds llama.cpp by hand (`cmake -B build [-DGGML_CUDA=ON] && cmake --build build`):
//                llama.cpp's own defaults (native CPU, OpenMP on, shared libraries, Release) plus only the backend
//                switch, into build/llama-server-<backend>-llamacpp/. Two defaults are turned off because they need
//                the network or a package this project does not install and change no inference code:
//                LLAMA_USE_PREBUILT_UI (downloads the web UI) and LLAMA_OPENSSL (HTTPS client).
//
// Both build llama.cpp as upstream has it at the pin, without llamad's vendor/patches (one of which, 0003, speeds up
// the CPU's flash attention): `git archive` of the pinned commit into build/upstream/vendor/llama.cpp/, built in
// build/upstream/build/llama-server-<flavour>/, a layout that mirrors the repository's so that ccache (its base
// directory set to build/upstream) reuses the objects of files no patch touches.
//
// Prints the binary's path on the last line. Skips the build when the binary exists for the pinned commit
// (LLAMAD_REBUILD_SERVER=1 forces).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nativeFlags } from './native-flags.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const llamacppDefaults = process.argv.includes('--defaults');
const { backend, defines } = nativeFlags();
const vendored = join(root, 'vendor', 'llama.cpp');
const upstream = join(root, 'build', 'upstream');
const src = join(upstream, 'vendor', 'llama.cpp');
const flavour = llamacppDefaults
  ? '-llamacpp'
  : `${defines.GGML_NATIVE === 'ON' ? '-native' : '-portable'}${defines.GGML_OPENMP === 'ON' ? '' : '-noomp'}`;
const out = join(upstream, 'build', `llama-server-${backend}${flavour}`);
const bin = join(out, 'bin', 'llama-server');
const builtFrom = join(out, 'llamad-pin');

function run(cmd, args) {
  const r = spawnSync(cmd, args, {
    stdio: ['ignore', 'inherit', 'inherit'],
    cwd: root,
    env: { ...process.env, CCACHE_BASEDIR: process.env.CCACHE_BASEDIR ?? upstream },
  });
  if (r.status !== 0) {
    console.error(`build-llama-server: ${cmd} ${args.join(' ')} failed (${r.status ?? r.signal})`);
    process.exit(1);
  }
}

/** The backend switch only (what a user adds to `cmake -B build`), for the --defaults flavour. */
function backendOnly() {
  const keep = ['GGML_CUDA', 'GGML_VULKAN', 'GGML_METAL', 'CMAKE_CUDA_ARCHITECTURES'];
  const picked = Object.fromEntries(Object.entries(defines).filter(([k, v]) => keep.includes(k) && v !== 'OFF'));
  return { ...picked, LLAMA_USE_PREBUILT_UI: 'OFF', LLAMA_OPENSSL: 'OFF' };
}

/** Reads a file's text, '' when it is missing. */
function readText(path) {
  return existsSync(path) ? readFileSync(path, 'utf8').trim() : '';
}

if (!existsSync(join(vendored, 'CMakeLists.txt'))) {
  console.error('build-llama-server: vendor/llama.cpp is missing: run `npm install` first');
  process.exit(1);
}
const pin = JSON.parse(readFileSync(join(root, 'vendor', 'llama.cpp.json'), 'utf8')).commit;
const exported = join(src, 'llamad-pin');
if (readText(exported) !== pin) {
  console.error(`build-llama-server: exporting llama.cpp ${pin} without llamad's patches into ${src}`);
  rmSync(src, { recursive: true, force: true });
  mkdirSync(src, { recursive: true });
  const tar = join(upstream, 'llama.cpp.tar');
  run('git', ['-C', vendored, 'archive', '--format=tar', '-o', tar, pin]);
  run('tar', ['-xf', tar, '-C', src]);
  rmSync(tar, { force: true });
  writeFileSync(exported, `${pin}\n`);
}
if (!existsSync(bin) || readText(builtFrom) !== pin || process.env.LLAMAD_REBUILD_SERVER === '1') {
  const serverDefines = llamacppDefaults
    ? backendOnly()
    : {
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
  console.error(
    `build-llama-server: configuring ${out} (backend=${backend}${llamacppDefaults ? ', llama.cpp defaults' : ''})`,
  );
  run('cmake', [
    '-S',
    src,
    '-B',
    out,
    ...(spawnSync('ninja', ['--version']).status === 0 ? ['-G', 'Ninja'] : []),
    ...Object.entries(serverDefines).map(([k, v]) => `-D${k}=${v}`),
  ]);
  const jobs = process.env.LLAMAD_JOBS ?? String(Math.max(1, availableParallelism()));
  // Only the server target (and llama-bench, for the CPU-build measurements in docs/native.md): tests and examples
  // are llama.cpp defaults too but change nothing the server runs.
  run('cmake', ['--build', out, '--target', 'llama-server', 'llama-bench', '--parallel', jobs]);
  writeFileSync(builtFrom, `${pin}\n`);
}
console.log(bin);
