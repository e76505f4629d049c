import assert from 'node:assert/strict';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import {
  blobUrl,
  lookupCredentials,
  manifestUrl,
  parseWwwAuthenticate,
  planParts,
  RegistrySession,
  resolveReference,
  shortId,
  toRegistryProgressWire,
  uploadsUrl,
} from '../../../src/registry';

const D = `sha256:${'ab'.repeat(32)}`;

describe('registry name → URL mapping (§6.1)', () => {
  it('uses Ollama defaults and https', () => {
    const ref = resolveReference('llama3.2', false);
    assert.equal(manifestUrl(ref), 'https://registry.ollama.ai/v2/library/llama3.2/manifests/latest');
    assert.equal(blobUrl(ref, D), `https://registry.ollama.ai/v2/library/llama3.2/blobs/${D}`);
  });
  it('keeps host:port and switches to http with insecure', () => {
    const ref = resolveReference('127.0.0.1:5000/ns/model:q4', true);
    assert.equal(manifestUrl(ref), 'http://127.0.0.1:5000/v2/ns/model/manifests/q4');
    assert.equal(uploadsUrl(ref), 'http://127.0.0.1:5000/v2/ns/model/blobs/uploads/');
  });
  it('refuses http:// without insecure and invalid names', () => {
    assert.throws(() => resolveReference('http://127.0.0.1:5000/ns/m', false), /insecure protocol http/);
    assert.equal(
      manifestUrl(resolveReference('http://127.0.0.1:5000/ns/m', true)),
      'http://127.0.0.1:5000/v2/ns/m/manifests/latest',
    );
    assert.throws(() => resolveReference('', false), /invalid model name/);
    assert.throws(() => resolveReference('a/b/c/d/e', false), /invalid model name/);
  });
  it('short ids are the first 12 hex characters', () => {
    assert.equal(shortId(D), 'abababababab');
  });
});

describe('WWW-Authenticate parsing', () => {
  it('parses a Bearer challenge with quoted values containing commas', () => {
    const c = parseWwwAuthenticate(
      'Bearer realm="https://auth.example/token",service="registry.example",scope="repository:ns/m:pull,push"',
    );
    assert.deepEqual(c, {
      scheme: 'bearer',
      params: { realm: 'https://auth.example/token', service: 'registry.example', scope: 'repository:ns/m:pull,push' },
    });
  });
  it('parses Basic, unquoted values and escapes; null for empty', () => {
    assert.deepEqual(parseWwwAuthenticate('Basic realm="Registry \\"x\\""'), {
      scheme: 'basic',
      params: { realm: 'Registry "x"' },
    });
    assert.deepEqual(parseWwwAuthenticate('bearer realm=http://a/t, service=s'), {
      scheme: 'bearer',
      params: { realm: 'http://a/t', service: 's' },
    });
    assert.equal(parseWwwAuthenticate(''), null);
    assert.equal(parseWwwAuthenticate(null), null);
  });
});

describe('progress records and parts', () => {
  it('done is true only on success', () => {
    assert.deepEqual(toRegistryProgressWire({ status: 'pulling manifest' }), {
      status: 'pulling manifest',
      done: false,
    });
    assert.deepEqual(
      toRegistryProgressWire({ status: 'pulling layer abababababab', digest: D, total: 5, completed: 2 }),
      {
        status: 'pulling layer abababababab',
        digest: D,
        total: 5,
        completed: 2,
        done: false,
      },
    );
    assert.deepEqual(toRegistryProgressWire({ status: 'success' }), { status: 'success', done: true });
  });
  it('splits large blobs into parts of at least partSize, at most ~16', () => {
    assert.deepEqual(planParts(10, 100), [{ index: 0, start: 0, end: 10 }]);
    assert.deepEqual(planParts(250, 100), [
      { index: 0, start: 0, end: 100 },
      { index: 1, start: 100, end: 200 },
      { index: 2, start: 200, end: 250 },
    ]);
    const many = planParts(3200, 100);
    assert.equal(many.length, 16);
    assert.equal(many.at(-1)?.end, 3200);
  });
});

describe('credentials', () => {
  it('reads OLLAMA_REGISTRY_AUTH by host, case-insensitively; malformed is ignored', async () => {
    const env = {
      OLLAMA_REGISTRY_AUTH: JSON.stringify({ 'Reg.Example:5000': { username: 'u', password: 'p' } }),
      OLLAMA_REGISTRY_AUTH_FILE: '/nonexistent',
    };
    assert.deepEqual(await lookupCredentials('reg.example:5000', env), { username: 'u', password: 'p' });
    assert.equal(await lookupCredentials('other', env), undefined);
    assert.equal(
      await lookupCredentials('x', { OLLAMA_REGISTRY_AUTH: '{', OLLAMA_REGISTRY_AUTH_FILE: '/nonexistent' }),
      undefined,
    );
  });
});

describe('RegistrySession auth handshake (loopback fake registry)', () => {
  async function serve(handler: (req: IncomingMessage, res: ServerResponse, base: string) => void) {
    let base = '';
    const server = createServer((req, res) => handler(req, res, base));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { base, close: () => new Promise<void>((r) => server.close(() => r())) };
  }

  it('Bearer: token fetched from the realm with Basic credentials, request retried with the token', async () => {
    const seen: string[] = [];
    const srv = await serve((req, res, base) => {
      seen.push(`${req.url} ${req.headers.authorization ?? '-'}`);
      if (req.url?.startsWith('/token')) {
        const u = new URL(req.url, base);
        assert.equal(u.searchParams.get('service'), 'reg');
        assert.deepEqual(u.searchParams.getAll('scope'), ['repository:ns/m:pull', 'repository:ns/o:pull']);
        if (req.headers.authorization !== `Basic ${Buffer.from('u:p').toString('base64')}`) {
          res.writeHead(401).end();
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token: 'T0K' }));
        return;
      }
      if (req.headers.authorization !== 'Bearer T0K') {
        res
          .writeHead(401, {
            'www-authenticate': `Bearer realm="${base}/token",service="reg",scope="repository:ns/m:pull repository:ns/o:pull"`,
          })
          .end();
        return;
      }
      res.writeHead(200).end('ok');
    });
    try {
      const session = new RegistrySession({ username: 'u', password: 'p' });
      const res = await session.fetch({ method: 'GET', url: `${srv.base}/v2/ns/m/manifests/latest` });
      assert.equal(await res.text(), 'ok');
      // The token is reused for the next request.
      const again = await session.fetch({ method: 'GET', url: `${srv.base}/v2/ns/m/blobs/x` });
      assert.equal(again.status, 200);
      assert.equal(seen.filter((s) => s.startsWith('/token')).length, 1);
      // Wrong credentials: unauthorized.
      const bad = new RegistrySession({ username: 'u', password: 'wrong' });
      await assert.rejects(bad.fetch({ method: 'GET', url: `${srv.base}/v2/ns/m/manifests/latest` }), {
        message: 'unauthorized: access denied',
      });
    } finally {
      await srv.close();
    }
  });

  it('Basic: retried with credentials; no credentials → unauthorized: access denied', async () => {
    const srv = await serve((req, res) => {
      if (req.headers.authorization === `Basic ${Buffer.from('a:b').toString('base64')}`) res.writeHead(200).end();
      else res.writeHead(401, { 'www-authenticate': 'Basic realm="r"' }).end();
    });
    try {
      const ok = await new RegistrySession({ username: 'a', password: 'b' }).fetch({
        method: 'GET',
        url: `${srv.base}/v2/`,
      });
      assert.equal(ok.status, 200);
      await assert.rejects(new RegistrySession(undefined).fetch({ method: 'GET', url: `${srv.base}/v2/` }), {
        message: 'unauthorized: access denied',
      });
    } finally {
      await srv.close();
    }
  });
});
