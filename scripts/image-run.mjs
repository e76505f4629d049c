// Runs the image built by scripts/image-build.mjs for scripts/image-test.mjs (`npm run image:test`; docs/deploy.md):
// with `podman run` (with explicit rlimits where the defaults cannot be set here), or, when podman cannot start a
// container on this machine, its root filesystem (buildah mount) entered with unshare + chroot. Both flavours have
// the same methods: exec, healthcheck, signal, wait, logs, remove. Has no effect when run on its own.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { IMAGE, capture, log, run } from './image-build.mjs';

// ---------------------------------------------------------------------------------------------------------------
// 3. Running it: podman, or the image's filesystem under chroot when podman cannot start containers here.

export function freePort() {
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
export function podmanRunArgs() {
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
export class PodmanContainer {
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
export class ChrootContainer {
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
