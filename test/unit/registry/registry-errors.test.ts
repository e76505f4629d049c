import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RegistryError } from '../../../src/common/errors';
import {
  describeNetworkFailure,
  isNetworkFailure,
  registryNetworkError,
  registryOperation,
} from '../../../src/registry/registry-errors';
import { RegistrySession } from '../../../src/registry/registry-http.client';
import { listenLoopback, rejection } from '../../utils/loopback';
import { freePort } from '../../utils/registry-server';

const D = `sha256:${'ab'.repeat(32)}`;

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
    const port = await freePort();
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
    const srv = await listenLoopback(createServer((req) => req.socket.destroy()));
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
    const srv = await listenLoopback(createServer((req) => req.socket.resetAndDestroy()));
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
    const port = await freePort();
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
      const srv = await listenLoopback(createHttpsServer(cert, (_req, res) => res.end('{}')));
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
      const srv = await listenLoopback(createServer((_req, res) => res.end('{}')));
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
