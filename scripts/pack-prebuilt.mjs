#!/usr/bin/env node
// Builds and packs one prebuilt addon package: `@llamad/<platform>-<arch>[-<backend>]` (docs/library.md "Prebuilt
// addons"). Usage: node scripts/pack-prebuilt.mjs [--backend cpu|cuda|vulkan|metal] [--out DIR] [--no-build]
//
// 1. builds the redistributable layout (LLAMAD_PREBUILT=1 → CMakeLists.txt: shared ggml/llama/mtmd next to
//    llamad.node with RPATH $ORIGIN, every backend a dlopen'ed module, all of ggml's CPU variants) into
//    build/prebuilt-<backend>/bin, unless --no-build;
// 2. stages llamad.node, the shared libraries, the backend modules, rpc-server and (OpenMP builds) the GCC OpenMP
//    runtime into DIR/<package folder>/bin with a package.json whose os/cpu/libc fields keep npm from installing it
//    on another platform;
// 3. `npm pack`s it into DIR (default build/packages) and prints the tarball's path.
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildDirName, nativeFlags } from './native-flags.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The package name for a backend on this platform; mirrors prebuiltPackageName in src/native/addon-candidates.ts
 * (a test checks that both agree).
 * @param {string} platform
 * @param {string} arch
 * @param {string} backend
 * @returns {string}
 */
export function packageName(platform, arch, backend) {
  const base = `@llamad/${platform}-${arch}`;
  return backend === 'cpu' || (platform === 'darwin' && backend === 'metal') ? base : `${base}-${backend}`;
}

/**
 * Whether a file of the build folder belongs in the package: the addon, rpc-server, and shared libraries/modules.
 * @param {string} name
 * @returns {boolean}
 */
export function isPackagedFile(name) {
  return (
    name === 'llamad.node' ||
    name === 'rpc-server' ||
    name === 'rpc-server.exe' ||
    /^lib.+\.(so(\.\d+)*|dylib)$/.test(name) ||
    /\.dll$/.test(name)
  );
}

/**
 * The files of the build folder to package, each once: a shared library is packaged under its SONAME
 * (`libllama.so.0`, what the dynamic loader asks for), not also as its fully versioned file and its `.so` link.
 * @param {string} dir
 * @returns {string[]}
 */
function packagedFiles(dir) {
  const names = readdirSync(dir).filter(isPackagedFile);
  const links = new Set(names.filter((f) => lstatSync(join(dir, f)).isSymbolicLink()));
  const behindLinks = new Set([...links].map((f) => basename(realpathSync(join(dir, f)))));
  return names.filter((f) => (links.has(f) ? /\.so\.\d+$/.test(f) : !behindLinks.has(f)));
}

/** The GCC OpenMP runtime the CPU modules link (libgomp.so.1), resolved through the compiler; undefined if none. */
function openmpRuntime() {
  const r = spawnSync(process.env.CXX ?? 'g++', ['-print-file-name=libgomp.so.1'], { encoding: 'utf8' });
  const path = r.status === 0 ? r.stdout.trim() : '';
  return path.startsWith('/') ? realpathSync(path) : undefined;
}

function main() {
  const { values } = parseArgs({
    options: {
      backend: { type: 'string', default: 'cpu' },
      out: { type: 'string', default: join(root, 'build', 'packages') },
      'no-build': { type: 'boolean', default: false },
    },
  });
  const env = { ...process.env, LLAMAD_PREBUILT: '1', LLAMAD_BACKEND: values.backend };
  const { backend, defines } = nativeFlags(env);
  if (!values['no-build']) {
    const r = spawnSync(process.execPath, [join(root, 'scripts', 'build-native.mjs')], { stdio: 'inherit', env });
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
  const built = join(root, 'build', buildDirName(backend, env), 'bin');
  const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
  const name = packageName(process.platform, process.arch, backend);
  const out = resolve(values.out);
  const stage = join(out, name.replace('@', '').replace('/', '-'));
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(join(stage, 'bin'), { recursive: true });

  const files = packagedFiles(built);
  if (!files.includes('llamad.node')) {
    console.error(`pack-prebuilt: ${built} has no llamad.node (build it first, or drop --no-build)`);
    process.exit(1);
  }
  for (const f of files) copyFileSync(join(built, f), join(stage, 'bin', f));
  const bundled = [];
  if (process.platform === 'linux' && defines.GGML_OPENMP === 'ON') {
    const gomp = openmpRuntime();
    if (!gomp) {
      console.error('pack-prebuilt: the build uses OpenMP but libgomp.so.1 was not found (g++ -print-file-name)');
      process.exit(1);
    }
    copyFileSync(gomp, join(stage, 'bin', 'libgomp.so.1'));
    bundled.push('libgomp.so.1 (GCC runtime, GPL-3.0 with the GCC Runtime Library Exception)');
  }
  const variants = files
    .map((f) => /^libggml-cpu-(.+)\.(so|dylib|dll)$/.exec(f)?.[1])
    .filter(Boolean)
    .sort();
  const vendor = JSON.parse(readFileSync(join(root, 'vendor', 'llama.cpp.json'), 'utf8'));
  const manifest = {
    name,
    version,
    description: `Prebuilt native addon of llamad for ${process.platform}-${process.arch} (${backend})`,
    license: 'MIT',
    os: [process.platform],
    cpu: [process.arch],
    ...(process.platform === 'linux' ? { libc: ['glibc'] } : {}),
    files: ['bin/', 'README.md'],
    llamad: { backend, cpuVariants: variants, llamaCppCommit: vendor.commit, openmp: defines.GGML_OPENMP === 'ON' },
  };
  writeFileSync(join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  writeFileSync(
    join(stage, 'README.md'),
    `# ${name}\n\nThe prebuilt native addon of [llamad](https://www.npmjs.com/package/llamad) ${version} for ` +
      `${process.platform}-${process.arch}, backend ${backend}: llamad.node, llama.cpp ${vendor.commit} as shared ` +
      `libraries and ggml backend modules${variants.length ? ` (CPU variants: ${variants.join(', ')}; the best one ` + 'for the processor is loaded at start-up)' : ''}, and rpc-server. Install it next to llamad; llamad finds it ` +
      'by itself.\n' +
      (bundled.length ? `\nBundled third-party runtime: ${bundled.join('; ')}.\n` : ''),
  );
  const r = spawnSync('npm', ['pack', '--json', '--pack-destination', out], { cwd: stage, encoding: 'utf8' });
  if (r.status !== 0) {
    console.error(`pack-prebuilt: npm pack failed:\n${r.stderr}`);
    process.exit(1);
  }
  const [{ filename, size }] = JSON.parse(r.stdout.slice(r.stdout.indexOf('[')));
  console.log(`pack-prebuilt: ${join(out, filename)} (${(size / 2 ** 20).toFixed(1)} MiB, ${files.length} files)`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
