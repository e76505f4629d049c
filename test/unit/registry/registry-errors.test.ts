import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { AddressInfo, createServer as createNetServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RegistryError } from '../../../src/common/errors';
import { downloadBlob, TransferTuning } from '../../../src/registry/blob-download';
import {
  describeNetworkFailure,
  isNetworkFailure,
  MAX_REGISTRY_DETAIL,
  registryNetworkError,
  registryOperation,
} from '../../../src/registry/registry-errors';
import type { RegistryFiles } from '../../../src/registry/registry-files';
import { RegistrySession, unexpectedStatus } from '../../../src/registry/registry-http.client';

const D = `sha256:${'ab'.repeat(32)}`;

/** Starts `server` on 127.0.0.1:0; returns its port and a closer that also drops open connections. */
async function listen(server: Server): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A TCP port on 127.0.0.1 that nothing listens on (bound, read, released). */
async function closedPort(): Promise<number> {
  const srv = createNetServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** What `fn` rejected with. */
async function rejection(fn: () => Promise<unknown>): Promise<Error> {
  try {
    await fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

/** A self-signed certificate for 127.0.0.1 made with the openssl CLI, or the reason it cannot be made. */
function selfSignedCert(dir: string): { key: Buffer; cert: Buffer } | string {
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
      ],
      { stdio: 'ignore' },
    );
  } catch (err) {
    return `the openssl CLI is not available to make a self-signed certificate (${(err as Error).message})`;
  }
  return { key: readFileSync(key), cert: readFileSync(cert) };
}

describe('registry operations named in errors', () => {
  it('derives the operation from method and URL', () => {
    const base = 'http://h:5000/v2/library/m';
    assert.equal(registryOperation('GET', `${base}/manifests/latest`), 'pull model manifest');
    assert.equal(registryOperation('PUT', `${base}/manifests/latest`), 'push model manifest');
    assert.equal(registryOperation('GET', `${base}/blobs/${D}`), 'pull layer abababababab');
    assert.equal(registryOperation('HEAD', `${base}/blobs/${D}`), 'push layer abababababab');
    assert.equal(registryOperation('POST', `${base}/blobs/uploads/`), 'push layer');
    assert.equal(registryOperation('PUT', `${base}/blobs/uploads/u1?digest=${D}`), 'push layer abababababab');
    assert.equal(registryOperation('GET', 'http://h:5000/token?scope=x'), 'get authorization token');
  });
});

describe('network failures say what failed (issue 11 item 4b)', () => {
  const url = (port: number | string, host = '127.0.0.1') => `http://${host}:${port}/v2/library/x/manifests/latest`;

  it('ECONNREFUSED: dial tcp <host:port>: connect: connection refused', async () => {
    const port = await closedPort();
    const err = await rejection(() => new RegistrySession(undefined).fetch({ method: 'GET', url: url(port) }));
    assert.ok(err instanceof RegistryError);
    assert.equal(err.upstreamStatus, undefined);
    assert.equal(
      err.message,
      `pull model manifest: Get "${url(port)}": dial tcp 127.0.0.1:${port}: connect: connection refused`,
    );
  });

  it('DNS: lookup <host>: no such host (a .invalid name never resolves)', async () => {
    const err = await rejection(() =>
      new RegistrySession(undefined).fetch({
        method: 'GET',
        url: 'https://llamad-test.invalid/v2/library/x/manifests/latest',
      }),
    );
    assert.ok(err instanceof RegistryError);
    assert.match(
      err.message,
      /^pull model manifest: Get "https:\/\/llamad-test\.invalid\/v2\/library\/x\/manifests\/latest": dial tcp: lookup llamad-test\.invalid: (no such host|temporary failure in name resolution)$/,
    );
  });

  it('a server that closes the connection: EOF, naming host:port', async () => {
    const srv = await listen(createServer((req) => req.socket.destroy()));
    try {
      const err = await rejection(() =>
        new RegistrySession(undefined).fetch({ method: 'GET', url: url(srv.port), operation: 'pull model manifest' }),
      );
      assert.ok(err instanceof RegistryError);
      assert.equal(
        err.message,
        `pull model manifest: Get "${url(srv.port)}": read tcp 127.0.0.1:${srv.port}: EOF (connection closed by the server)`,
      );
    } finally {
      await srv.close();
    }
  });

  it('a server that resets the connection: connection reset by peer', async () => {
    const srv = await listen(createServer((req) => req.socket.resetAndDestroy()));
    try {
      const err = await rejection(() =>
        new RegistrySession(undefined).fetch({
          method: 'HEAD',
          url: `http://127.0.0.1:${srv.port}/v2/ns/m/blobs/${D}`,
        }),
      );
      assert.ok(err instanceof RegistryError);
      // Depending on timing undici sees the RST (ECONNRESET) or only the close.
      assert.match(
        err.message,
        new RegExp(
          `^push layer abababababab: Head "http://127\\.0\\.0\\.1:${srv.port}/v2/ns/m/blobs/${D}": read tcp 127\\.0\\.0\\.1:${srv.port}: (connection reset by peer|EOF \\(connection closed by the server\\))$`,
        ),
      );
    } finally {
      await srv.close();
    }
  });

  it('the query of a URL (upload state) is never shown', async () => {
    const port = await closedPort();
    const err = await rejection(() =>
      new RegistrySession(undefined).fetch({
        method: 'PUT',
        url: `http://127.0.0.1:${port}/v2/ns/m/blobs/uploads/u1?_state=SECRET&digest=${D}`,
      }),
    );
    assert.equal(
      err.message,
      `push layer abababababab: Put "http://127.0.0.1:${port}/v2/ns/m/blobs/uploads/u1": dial tcp 127.0.0.1:${port}: connect: connection refused`,
    );
  });

  it('aborts and non-network errors pass unchanged', async () => {
    const abort = new DOMException('This operation was aborted', 'AbortError');
    assert.equal(registryNetworkError(abort, { method: 'GET', url: url(1) }), abort);
    const disk = Object.assign(new Error('ENOSPC'), { code: 'ENOSPC', syscall: 'write', errno: -28 });
    assert.equal(isNetworkFailure(disk), false);
    assert.equal(registryNetworkError(disk, { method: 'GET', url: url(1) }), disk);
    const registry = new RegistryError('x');
    assert.equal(registryNetworkError(registry, { method: 'GET', url: url(1) }), registry);
    const controller = new AbortController();
    controller.abort();
    const aborted = await rejection(() =>
      new RegistrySession(undefined).fetch({ method: 'GET', url: url(9), signal: controller.signal }),
    );
    assert.equal(aborted.name, 'AbortError');
  });

  describe('each failure class, from the causes undici reports', () => {
    const target = new URL('https://registry.example:5000/v2/library/x/manifests/latest');
    const failed = (cause: object) => Object.assign(new TypeError('fetch failed'), { cause });
    const table: Array<[string, object, string]> = [
      [
        'ENOTFOUND',
        { code: 'ENOTFOUND', hostname: 'registry.example' },
        'dial tcp: lookup registry.example: no such host',
      ],
      [
        'EAI_AGAIN',
        { code: 'EAI_AGAIN', hostname: 'registry.example' },
        'dial tcp: lookup registry.example: temporary failure in name resolution',
      ],
      [
        'ECONNREFUSED',
        { code: 'ECONNREFUSED', address: '10.0.0.1', port: 5000 },
        'dial tcp 10.0.0.1:5000: connect: connection refused',
      ],
      [
        'ECONNREFUSED (IPv6)',
        { code: 'ECONNREFUSED', address: '::1', port: 5000 },
        'dial tcp [::1]:5000: connect: connection refused',
      ],
      ['EHOSTUNREACH', { code: 'EHOSTUNREACH' }, 'dial tcp registry.example:5000: connect: no route to host'],
      ['ECONNRESET', { code: 'ECONNRESET' }, 'read tcp registry.example:5000: connection reset by peer'],
      ['ETIMEDOUT', { code: 'ETIMEDOUT' }, 'dial tcp registry.example:5000: i/o timeout'],
      ['UND_ERR_CONNECT_TIMEOUT', { code: 'UND_ERR_CONNECT_TIMEOUT' }, 'dial tcp registry.example:5000: i/o timeout'],
      [
        'UND_ERR_HEADERS_TIMEOUT',
        { code: 'UND_ERR_HEADERS_TIMEOUT' },
        'registry.example:5000: timeout awaiting response headers',
      ],
      [
        'CERT_HAS_EXPIRED',
        { code: 'CERT_HAS_EXPIRED' },
        'tls: failed to verify certificate: x509: certificate has expired or is not yet valid',
      ],
      [
        'DEPTH_ZERO_SELF_SIGNED_CERT',
        { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' },
        'tls: failed to verify certificate: x509: certificate signed by unknown authority',
      ],
      [
        'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
        { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' },
        'tls: failed to verify certificate: x509: certificate signed by unknown authority',
      ],
      [
        'ERR_TLS_CERT_ALTNAME_INVALID',
        { code: 'ERR_TLS_CERT_ALTNAME_INVALID' },
        'tls: failed to verify certificate: x509: certificate is not valid for registry.example',
      ],
      [
        'ERR_SSL_WRONG_VERSION_NUMBER',
        { code: 'ERR_SSL_WRONG_VERSION_NUMBER' },
        'tls: first record does not look like a TLS handshake',
      ],
      [
        'other TLS code',
        { code: 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE' },
        'tls: err ssl sslv3 alert handshake failure',
      ],
      ['bad port', new Error('bad port'), 'dial tcp registry.example:5000: port blocked by fetch (bad port)'],
      [
        'AggregateError',
        Object.assign(
          new AggregateError([
            Object.assign(new Error('x'), { code: 'ECONNREFUSED', address: '127.0.0.1', port: 5000 }),
          ]),
          {},
        ),
        'dial tcp 127.0.0.1:5000: connect: connection refused',
      ],
      ['unknown', new Error('something odd at /srv/secret/dir'), 'registry.example:5000: something odd at <path>'],
    ];
    for (const [name, cause, detail] of table) {
      it(`${name} → ${detail}`, () => {
        const err = failed(cause);
        assert.ok(isNetworkFailure(err));
        assert.equal(describeNetworkFailure(err, target), detail);
        const mapped = registryNetworkError(err, { method: 'GET', url: target });
        assert.ok(mapped instanceof RegistryError);
        assert.equal(
          mapped.message,
          `pull model manifest: Get "https://registry.example:5000/v2/library/x/manifests/latest": ${detail}`,
        );
      });
    }
  });

  describe('TLS against real servers', () => {
    let dir: string;
    let cert: { key: Buffer; cert: Buffer } | string;
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'llamad-tls-'));
      cert = selfSignedCert(dir);
    });
    after(() => rm(dir, { recursive: true, force: true }));

    it('a self-signed certificate: tls: … certificate signed by unknown authority', async (t) => {
      if (typeof cert === 'string') return t.skip(cert);
      const srv = await listen(createHttpsServer(cert, (_req, res) => res.end('{}')));
      try {
        const err = await rejection(() =>
          new RegistrySession(undefined).fetch({
            method: 'GET',
            url: `https://127.0.0.1:${srv.port}/v2/ns/m/manifests/latest`,
          }),
        );
        assert.equal(
          err.message,
          `pull model manifest: Get "https://127.0.0.1:${srv.port}/v2/ns/m/manifests/latest": tls: failed to verify certificate: x509: certificate signed by unknown authority`,
        );
      } finally {
        await srv.close();
      }
    });

    it('https to a plain-HTTP server: tls: first record does not look like a TLS handshake', async () => {
      const srv = await listen(createServer((_req, res) => res.end('{}')));
      try {
        const err = await rejection(() =>
          new RegistrySession(undefined).fetch({
            method: 'GET',
            url: `https://127.0.0.1:${srv.port}/v2/ns/m/manifests/latest`,
          }),
        );
        assert.match(err.message, /: tls: first record does not look like a TLS handshake$/);
      } finally {
        await srv.close();
      }
    });
  });
});

describe('unexpected registry statuses never echo the body', () => {
  let srv: { port: number; close: () => Promise<void> };
  let routes: Record<string, (res: ServerResponse) => void>;
  before(async () => {
    srv = await listen(
      createServer((req: IncomingMessage, res: ServerResponse) => {
        const route = routes[req.url ?? ''];
        if (route) route(res);
        else res.writeHead(404).end();
      }),
    );
  });
  after(() => srv.close());
  const base = () => `http://127.0.0.1:${srv.port}`;
  const statusError = async (method: 'GET' | 'PUT' | 'HEAD', path: string) => {
    const res = await new RegistrySession(undefined).fetch({ method, url: `${base()}${path}` });
    return unexpectedStatus(res);
  };

  it('500 with an HTML page → only the status line', async () => {
    routes = {
      '/v2/library/x/manifests/latest': (res) =>
        res
          .writeHead(500, 'Oops <b>', { 'content-type': 'text/html' })
          .end('<html><body><h1>500 Internal Server Error</h1><p>nginx at /var/www/secret</p></body></html>'),
    };
    const err = await statusError('GET', '/v2/library/x/manifests/latest');
    assert.ok(err instanceof RegistryError);
    assert.equal(err.upstreamStatus, 500);
    assert.equal(err.message, 'pull model manifest: 500 Internal Server Error');
    assert.doesNotMatch(err.message, /<|html|nginx/);
  });

  it('a Docker distribution error body → <operation>: <status> <code>: <message>', async () => {
    routes = {
      '/v2/ns/m/manifests/latest': (res) =>
        res.writeHead(400, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            errors: [
              { code: 'MANIFEST_INVALID', message: 'manifest invalid', detail: { huge: 'x'.repeat(5000) } },
              { code: 'BLOB_UNKNOWN', message: 'blob unknown to registry' },
            ],
          }),
        ),
    };
    const err = await statusError('PUT', '/v2/ns/m/manifests/latest');
    assert.equal(
      err.message,
      'push model manifest: 400 Bad Request: MANIFEST_INVALID: manifest invalid; BLOB_UNKNOWN: blob unknown to registry',
    );
  });

  it('a long registry message is cut to 200 characters, control characters flattened', async () => {
    routes = {
      [`/v2/ns/m/blobs/${D}`]: (res) =>
        res
          .writeHead(403)
          .end(JSON.stringify({ errors: [{ code: 'DENIED', message: `line1\nline2 ${'y'.repeat(1000)}` }] })),
    };
    const err = await statusError('HEAD', `/v2/ns/m/blobs/${D}`);
    // HEAD has no body: the status line only.
    assert.equal(err.message, 'push layer abababababab: 403 Forbidden');
    const get = await new RegistrySession(undefined).fetch({ method: 'GET', url: `${base()}/v2/ns/m/blobs/${D}` });
    const long = await unexpectedStatus(get);
    const prefix = 'pull layer abababababab: 403 Forbidden: ';
    assert.ok(long.message.startsWith(`${prefix}DENIED: line1 line2 yyy`), long.message);
    assert.equal(long.message.length, prefix.length + MAX_REGISTRY_DETAIL);
    assert.ok(long.message.endsWith('…'));
  });

  it('{"error": "..."} bodies and plain text', async () => {
    routes = {
      '/v2/a/b/manifests/t1': (res) => res.writeHead(429).end('{"error":"rate limited"}'),
      '/v2/a/b/manifests/t2': (res) => res.writeHead(502).end('Bad gateway from upstream proxy 10.0.0.7'),
      '/v2/a/b/manifests/t3': (res) => res.writeHead(599).end(),
    };
    assert.equal(
      (await statusError('GET', '/v2/a/b/manifests/t1')).message,
      'pull model manifest: 429 Too Many Requests: rate limited',
    );
    assert.equal((await statusError('GET', '/v2/a/b/manifests/t2')).message, 'pull model manifest: 502 Bad Gateway');
    assert.equal((await statusError('GET', '/v2/a/b/manifests/t3')).message, 'pull model manifest: 599');
  });

  it('an explicit operation wins', async () => {
    routes = { '/v2/a/b/manifests/t1': (res) => res.writeHead(500).end() };
    const res = await new RegistrySession(undefined).fetch({ method: 'GET', url: `${base()}/v2/a/b/manifests/t1` });
    assert.equal((await unexpectedStatus(res, 'check model')).message, 'check model: 500 Internal Server Error');
  });
});

describe('blob download failures', () => {
  let dir: string;
  const tuning: TransferTuning = {
    partSize: 1 << 20,
    maxParallelParts: 2,
    uploadChunkSize: 1 << 20,
    attempts: 3,
    retryDelayMs: 1,
  };
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'llamad-blob-'));
    await mkdir(join(dir, 'blobs'));
    await mkdir(join(dir, 'partial'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** The part of RegistryFiles downloadBlob uses, on a temporary directory. */
  const files = () =>
    ({
      ensurePartialDir: () => Promise.resolve(),
      partPath: (digest: string, index: number) => join(dir, 'partial', `${digest.replace(':', '-')}-partial-${index}`),
      joinedPath: (digest: string) => join(dir, 'partial', `${digest.replace(':', '-')}-partial`),
      commitBlob: (from: string, digest: string) => rename(from, join(dir, 'blobs', digest.replace(':', '-'))),
    }) as unknown as RegistryFiles;

  it('a body cut mid-way on every attempt: max retries exceeded: pull layer …: EOF', async () => {
    const body = Buffer.alloc(4096, 7);
    const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
    let requests = 0;
    const srv = await listen(
      createServer((_req, res) => {
        requests++;
        res.writeHead(200, { 'content-length': String(body.length) });
        res.write(body.subarray(0, 100));
        setTimeout(() => res.socket?.destroy(), 10);
      }),
    );
    try {
      const url = `http://127.0.0.1:${srv.port}/v2/ns/m/blobs/${digest}`;
      const err = await rejection(() =>
        downloadBlob(
          files(),
          {
            session: new RegistrySession(undefined),
            url,
            digest,
            size: body.length,
            signal: new AbortController().signal,
            onProgress: () => undefined,
          },
          tuning,
        ),
      );
      assert.ok(err instanceof RegistryError, String(err));
      assert.equal(requests, 3);
      assert.equal(
        err.message,
        `max retries exceeded: pull layer ${digest.slice(7, 19)}: Get "${url}": read tcp 127.0.0.1:${srv.port}: EOF (connection closed by the server)`,
      );
    } finally {
      await srv.close();
    }
  });

  it('a registry 500 with HTML on every attempt: max retries exceeded: … 500 Internal Server Error', async () => {
    const srv = await listen(
      createServer((_req, res) => res.writeHead(500, { 'content-type': 'text/html' }).end('<html>down</html>')),
    );
    try {
      const url = `http://127.0.0.1:${srv.port}/v2/ns/m/blobs/${D}`;
      const err = await rejection(() =>
        downloadBlob(
          files(),
          {
            session: new RegistrySession(undefined),
            url,
            digest: D,
            size: 10,
            signal: new AbortController().signal,
            onProgress: () => undefined,
          },
          tuning,
        ),
      );
      assert.ok(err instanceof RegistryError);
      assert.equal(err.upstreamStatus, 500);
      assert.equal(err.message, 'max retries exceeded: pull layer abababababab: 500 Internal Server Error');
    } finally {
      await srv.close();
    }
  });

  it('404: file does not exist (not retried)', async () => {
    let requests = 0;
    const srv = await listen(createServer((_req, res) => (requests++, res.writeHead(404).end('{"errors":[]}'))));
    try {
      const url = `http://127.0.0.1:${srv.port}/v2/ns/m/blobs/${D}`;
      const err = await rejection(() =>
        downloadBlob(
          files(),
          {
            session: new RegistrySession(undefined),
            url,
            digest: D,
            size: 10,
            signal: new AbortController().signal,
            onProgress: () => undefined,
          },
          tuning,
        ),
      );
      assert.equal(err.message, 'file does not exist');
      assert.equal(requests, 1);
      assert.deepEqual(
        await readFile(join(dir, 'partial', `${D.replace(':', '-')}-partial-0`)).catch(() => null),
        null,
      );
    } finally {
      await srv.close();
    }
  });
});
