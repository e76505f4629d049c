import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { createServer, IncomingMessage, request, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO_ROOT } from '../../src/config';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { postJson, readNdjson } from '../utils/ndjson';
import { freePort, RegistryServer, registryMissing, startRegistry } from '../utils/registry-server';

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return `sha256:${hash.digest('hex')}`;
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(p)));
    else out.push(p);
  }
  return out;
}

/** What checkStore found. */
interface StoreReport {
  manifests: number;
  blobs: number;
  /** Dot-prefixed temporary files in blobs/ (the model store's `.tmp-*` names, §7.7: skipped, swept at startup). */
  tempFiles: string[];
}

/**
 * Asserts the store is consistent after a crash: every manifest under manifests/ (dot-prefixed temporary files
 * skipped, as the store does) parses and every layer and its config exists in blobs/ with the right size and
 * sha256; every `sha256-<hex>` file in blobs/ hashes to its name; no other file (a `*-partial*` download, …) lives in
 * blobs/. Dot-prefixed temporary files are returned, and refused when `allowTemp` is false.
 */
async function checkStore(root: string, allowTemp: boolean): Promise<StoreReport> {
  const report: StoreReport = { manifests: 0, blobs: 0, tempFiles: [] };
  const blobsDir = join(root, 'blobs');
  for (const name of await readdir(blobsDir).catch(() => [] as string[])) {
    if (name.startsWith('.')) {
      report.tempFiles.push(name);
      continue;
    }
    assert.match(name, /^sha256-[0-9a-f]{64}$/, `only verified blobs live in blobs/: ${name}`);
    assert.equal(await sha256File(join(blobsDir, name)), name.replace('-', ':'), `blob ${name} verifies`);
    report.blobs++;
  }
  if (!allowTemp) assert.deepEqual(report.tempFiles, [], 'no temporary file in blobs/');
  for (const path of await walk(join(root, 'manifests'))) {
    if (path.split('/').at(-1)?.startsWith('.')) continue;
    const m = JSON.parse(await readFile(path, 'utf8')) as {
      config: { digest: string; size: number };
      layers: Array<{ digest: string; size: number }>;
    };
    for (const l of [...m.layers, m.config]) {
      const blob = join(blobsDir, l.digest.replace(':', '-'));
      const st = await stat(blob).catch(() => null);
      assert.ok(st, `${path} points to ${l.digest}, which is missing`);
      assert.equal(st.size, l.size, `${l.digest} is complete`);
    }
    report.manifests++;
  }
  return report;
}

/** The real daemon (`node dist/src/main.js`) as a child process. */
interface Daemon {
  base: string;
  child: ChildProcess;
  kill9(): Promise<void>;
}

async function startDaemon(modelsDir: string): Promise<Daemon> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(REPO_ROOT, 'dist', 'src', 'main.js')], {
    env: { ...process.env, OLLAMA_HOST: `127.0.0.1:${port}`, OLLAMA_MODELS: modelsDir, OLLAMA_REGISTRY_AUTH: '{}' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const res = await fetch(`${base}/api/version`);
      await res.body?.cancel();
      if (res.ok) break;
    } catch {
      // not up yet
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`daemon did not start: ${stderr.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 30));
  }
  return {
    base,
    child,
    kill9: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** A loopback proxy that records blob requests and, while `bytesPerSecond` is set, throttles blob bodies. */
interface ThrottleProxy {
  host: string;
  bytesPerSecond: number | null;
  requests: Array<{ url: string; range?: string }>;
  close(): Promise<void>;
}

async function startThrottleProxy(target: string): Promise<ThrottleProxy> {
  const [host, port] = target.split(':');
  const proxy: ThrottleProxy = { host: '', bytesPerSecond: null, requests: [], close: () => Promise.resolve() };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    proxy.requests.push({ url: req.url ?? '', range: req.headers.range });
    const up = request(
      { host, port: Number(port), method: req.method, path: req.url, headers: { ...req.headers, host: target } },
      (upRes) => {
        const headers = { ...upRes.headers };
        if (headers.location) headers.location = headers.location.replace(target, proxy.host);
        res.writeHead(upRes.statusCode ?? 502, headers);
        const rate = proxy.bytesPerSecond;
        if (!rate || !/\/blobs\/sha256:/.test(req.url ?? '') || req.method !== 'GET') return void upRes.pipe(res);
        // Forward 16 KiB slices at the configured rate.
        upRes.on('data', (chunk: Buffer) => {
          upRes.pause();
          const send = async () => {
            for (let i = 0; i < chunk.length; i += 16384) {
              if (res.destroyed) return;
              res.write(chunk.subarray(i, i + 16384));
              await new Promise((r) => setTimeout(r, (16384 / rate) * 1000));
            }
            upRes.resume();
          };
          void send();
        });
        upRes.on('end', () => res.end());
      },
    );
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  proxy.host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r())));
  return proxy;
}

// Issue: "A kill -9 at any point of create, pull or push leaves the store consistent: every manifest points to
// complete, verified blobs; a restarted pull resumes instead of starting over." The real daemon, SIGKILLed.
describe('crash safety: kill -9 during pull and create', { skip: registryMissing() }, () => {
  let registry: RegistryServer;
  let proxy: ThrottleProxy;
  const dirs: string[] = [];
  const daemons: Daemon[] = [];
  let name: string;
  let bigLayer: { digest: string; size: number };

  const newDir = async () => {
    const d = await mkdtemp(join(tmpdir(), 'llamad-crash-'));
    dirs.push(d);
    return d;
  };
  const daemon = async (dir: string) => {
    const d = await startDaemon(dir);
    daemons.push(d);
    return d;
  };

  before(async () => {
    ensureTestModels();
    registry = await startRegistry();
    proxy = await startThrottleProxy(registry.host);
    name = `test/qwen:latest`;
    const d = await daemon(await newDir());
    const full = `${registry.host}/${name}`;
    const created = await postJson(`${d.base}/api/create`, {
      model: full,
      modelfile: `FROM ${TINY_QWEN2}`,
      stream: false,
    });
    assert.equal(created.status, 200, await created.clone().text());
    const pushed = await postJson(`${d.base}/api/push`, { model: full, insecure: true, stream: false });
    assert.deepEqual(await pushed.json(), { status: 'success' });
    const manifest = (await await fetch(`http://${registry.host}/v2/test/qwen/manifests/latest`, {
      headers: { accept: 'application/vnd.docker.distribution.manifest.v2+json' },
    }).then((r) => r.json())) as { layers: Array<{ digest: string; size: number }> };
    bigLayer = manifest.layers.reduce((a, b) => (a.size > b.size ? a : b));
    assert.ok(bigLayer.size > 40_000_000);
    await d.kill9();
  });
  after(async () => {
    for (const d of daemons) await d.kill9();
    await proxy?.close();
    await registry?.stop();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('kill -9 mid-pull: store consistent; the restarted pull resumes with Range and verifies', async () => {
    const dir = await newDir();
    const model = `${proxy.host}/${name}`;
    proxy.bytesPerSecond = 8 * 1024 * 1024;
    proxy.requests.length = 0;
    let d = await daemon(dir);
    // Start the pull and do not wait for it; kill once a few MB of the big layer are on disk.
    const pending = postJson(`${d.base}/api/pull`, { model, insecure: true })
      .then((r) => r.text())
      .catch(() => '');
    const part = join(dir, 'partial', `${bigLayer.digest.replace(':', '-')}-partial-0`);
    const deadline = Date.now() + 20_000;
    while (((await stat(part).catch(() => null))?.size ?? 0) < 3_000_000) {
      assert.ok(Date.now() < deadline, 'the pull got under way');
      await new Promise((r) => setTimeout(r, 20));
    }
    await d.kill9();
    await pending;
    const have = (await stat(part)).size;
    assert.ok(have > 0 && have < bigLayer.size, `mid-blob when killed: ${have}/${bigLayer.size}`);
    const report = await checkStore(dir, false);
    assert.equal(report.manifests, 0, 'no manifest before every blob is verified');
    assert.equal(
      (await readdir(join(dir, 'blobs')).catch(() => [] as string[])).includes(bigLayer.digest.replace(':', '-')),
      false,
    );

    // Restart, pull again at full speed: it resumes from where the partial file ends.
    proxy.bytesPerSecond = null;
    proxy.requests.length = 0;
    d = await daemon(dir);
    const records = await readNdjson<{ status?: string; error?: string }>(
      await postJson(`${d.base}/api/pull`, { model, insecure: true }),
    );
    assert.equal(records.at(-1)?.status, 'success', JSON.stringify(records.at(-1)));
    const ranged = proxy.requests.filter((r) => r.url.includes(bigLayer.digest) && r.range);
    const starts = ranged.map((r) => Number(/^bytes=(\d+)-/.exec(r.range ?? '')?.[1]));
    assert.ok(
      starts.some((s) => s > 0),
      `resumed with a Range starting past 0: ${ranged.map((r) => r.range).join(', ')}`,
    );
    assert.ok(starts[0] >= have, `resumed at or after the ${have} bytes kept (Range ${ranged[0]?.range})`);
    const after = await checkStore(dir, false);
    assert.equal(after.manifests, 1);
    assert.equal(await sha256File(join(dir, 'blobs', bigLayer.digest.replace(':', '-'))), bigLayer.digest);
    assert.deepEqual(await readdir(join(dir, 'partial')), []);
    await d.kill9();
  });

  it('kill -9 at 5, 20, 50 ms into /api/create: consistent each time; a final create succeeds', async () => {
    const dir = await newDir();
    const reports: StoreReport[] = [];
    for (const delay of [5, 20, 50, 120]) {
      const d = await daemon(dir);
      const pending = postJson(`${d.base}/api/create`, {
        model: 'crash/qwen:latest',
        modelfile: `FROM ${TINY_QWEN2}\nSYSTEM "crash ${delay}"`,
      })
        .then((r) => r.text())
        .catch(() => '');
      await new Promise((r) => setTimeout(r, delay));
      await d.kill9();
      await pending;
      reports.push(await checkStore(dir, true));
    }
    const d = await daemon(dir);
    const res = await postJson(`${d.base}/api/create`, {
      model: 'crash/qwen:latest',
      modelfile: `FROM ${TINY_QWEN2}\nSYSTEM "final"`,
      stream: false,
    });
    assert.equal(((await res.json()) as { status?: string }).status, 'success');
    const final = await checkStore(dir, true);
    assert.ok(final.manifests >= 1);
    const show = await postJson(`${d.base}/api/show`, { model: 'crash/qwen:latest' });
    assert.equal(show.status, 200);
    assert.equal(((await show.json()) as { system?: string }).system, 'final');
    await d.kill9();
  });
});
