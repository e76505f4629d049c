import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, IncomingMessage, request, ServerResponse } from 'node:http';
import { AddressInfo, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { missingPrograms } from './programs';

/** A running Docker Distribution registry (Debian `docker-registry`, distribution 2.8) on loopback. */
export interface RegistryServer {
  /** `127.0.0.1:<port>`: the host part of model names. */
  host: string;
  /** Stops the process and removes its storage. */
  stop(): Promise<void>;
}

/** Options of startRegistry. */
export interface RegistryServerOptions {
  /** Requires HTTP Basic auth (htpasswd, bcrypt) with these credentials. */
  basicAuth?: { username: string; password: string };
}

/** A free TCP port on 127.0.0.1 (bound, read, released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createNetServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Why the registry tests cannot run here: undefined when `docker-registry` is installed, else the skip reason naming
 * the command that installs it (CI installs it through .ci/run).
 */
export function registryMissing(): string | undefined {
  return missingPrograms('docker-registry');
}

/** Like registryMissing, for registries with Basic auth (startRegistry's `basicAuth`): `htpasswd` is needed too. */
export function registryAuthMissing(): string | undefined {
  return missingPrograms('docker-registry', 'htpasswd');
}

/**
 * Starts `docker-registry serve <config.yml>` on 127.0.0.1:<free port> with a temporary storage directory and
 * `storage.delete.enabled`, then waits until `GET /v2/` answers (200, or 401 with auth). Tests that call it skip
 * with registryMissing() / registryAuthMissing() as their reason.
 * @throws Error with the install command when a program is missing, or when the registry does not come up in 15 s.
 */
export async function startRegistry(options: RegistryServerOptions = {}): Promise<RegistryServer> {
  const missing = options.basicAuth ? registryAuthMissing() : registryMissing();
  if (missing) throw new Error(missing);
  const dir = await mkdtemp(join(tmpdir(), 'llamad-registry-'));
  const port = await freePort();
  let auth = '';
  if (options.basicAuth) {
    const r = spawnSync('htpasswd', ['-Bbn', options.basicAuth.username, options.basicAuth.password], {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`htpasswd failed (status ${String(r.status)}): ${r.stderr ?? ''}`);
    await writeFile(join(dir, 'htpasswd'), r.stdout);
    auth = `auth:\n  htpasswd:\n    realm: llamad-test\n    path: ${join(dir, 'htpasswd')}\n`;
  }
  const config =
    `version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n` +
    `storage:\n  filesystem:\n    rootdirectory: ${join(dir, 'data')}\n  delete:\n    enabled: true\n` +
    `http:\n  addr: 127.0.0.1:${port}\n` +
    auth;
  await writeFile(join(dir, 'config.yml'), config);
  const child: ChildProcess = spawn('docker-registry', ['serve', join(dir, 'config.yml')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v2/`);
      await res.body?.cancel();
      if (res.status === 200 || res.status === 401) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`docker-registry did not start: ${stderr.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { host: `127.0.0.1:${port}`, stop };
}

/** A request seen by the proxy. */
export interface ProxiedRequest {
  method: string;
  url: string;
  range?: string;
}

/**
 * What to do with a blob GET response body: return the bytes to send (possibly changed), or `'cut'` to destroy the
 * connection after sending what came before. Called per chunk with the bytes of the body sent so far.
 */
export type BlobTamper = (req: ProxiedRequest, chunk: Buffer, sentSoFar: number) => Buffer | 'cut';

/** A loopback reverse proxy in front of a registry that records requests and can tamper with blob downloads. */
export interface RegistryProxy {
  host: string;
  requests: ProxiedRequest[];
  /** Set to change blob GET bodies; null passes everything through. */
  tamper: BlobTamper | null;
  close(): Promise<void>;
}

/** Starts a reverse proxy on 127.0.0.1:<port 0> forwarding to `target` (`host:port`). */
export async function startProxy(target: string): Promise<RegistryProxy> {
  const [targetHost, targetPort] = target.split(':');
  const proxy: RegistryProxy = { host: '', requests: [], tamper: null, close: () => Promise.resolve() };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const seen: ProxiedRequest = { method: req.method ?? 'GET', url: req.url ?? '/', range: req.headers.range };
    proxy.requests.push(seen);
    const headers = { ...req.headers, host: target };
    const upstream = request(
      { host: targetHost, port: Number(targetPort), method: req.method, path: req.url, headers },
      (up) => {
        const isBlob = seen.method === 'GET' && /\/blobs\/sha256:/.test(seen.url);
        const tamper = proxy.tamper;
        const outHeaders = { ...up.headers };
        if (outHeaders.location) outHeaders.location = outHeaders.location.replace(target, proxy.host);
        res.writeHead(up.statusCode ?? 502, outHeaders);
        if (!isBlob || !tamper) {
          up.pipe(res);
          return;
        }
        let sent = 0;
        up.on('data', (chunk: Buffer) => {
          const out = tamper(seen, chunk, sent);
          if (out === 'cut') {
            up.destroy();
            res.socket?.destroy();
            return;
          }
          sent += out.length;
          res.write(out);
        });
        up.on('end', () => res.end());
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  proxy.host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return proxy;
}
