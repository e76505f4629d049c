import assert from 'node:assert/strict';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { RegistryError } from '../../../src/common/errors';
import { MAX_REGISTRY_DETAIL } from '../../../src/registry/registry-errors';
import { RegistrySession, unexpectedStatus } from '../../../src/registry/registry-http.client';
import { listenLoopback, type LoopbackServer } from '../../utils/loopback';

const D = `sha256:${'ab'.repeat(32)}`;

describe('unexpected registry statuses never echo the body', () => {
  let srv: LoopbackServer;
  let routes: Record<string, (res: ServerResponse) => void>;
  before(async () => {
    srv = await listenLoopback(
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
