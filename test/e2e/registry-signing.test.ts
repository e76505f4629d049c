import assert from 'node:assert/strict';
import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EMPTY_BODY_HASH, loadOrCreateIdentity } from '../../src/registry';
import { FakeBinding } from '../utils/fake-binding';
import { postJson, readNdjson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/**
 * A loopback registry that answers 401 `Bearer realm="http://<realmHost>/token"` until it sees a token it issued,
 * and a token endpoint on the same server that issues one only for a valid Ollama signature (§6.2) by an
 * authorized key.
 */
interface FakeSignedRegistry {
  host: string;
  authorizedKeys: Set<string>;
  /** Host written into the realm (default: the registry's own). */
  realmHost?: string;
  tokenRequests: Array<{ url: string; verified: boolean }>;
  close(): Promise<void>;
}

async function startSignedRegistry(blobs: Map<string, Buffer>, manifest: Buffer): Promise<FakeSignedRegistry> {
  const issued = new Set<string>();
  const reg: FakeSignedRegistry = {
    host: '',
    authorizedKeys: new Set(),
    tokenRequests: [],
    close: () => Promise.resolve(),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', `http://${reg.host}`);
    if (url.pathname === '/token') {
      const signed = `GET,http://${reg.host}${req.url ?? ''},${EMPTY_BODY_HASH}`;
      const [pub, sig] = (req.headers.authorization ?? '').split(':');
      let ok = false;
      try {
        const blob = Buffer.from(pub, 'base64');
        const raw = blob.subarray(4 + 11 + 4);
        const key = createPublicKey({
          key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') },
          format: 'jwk',
        });
        const ts = Number(url.searchParams.get('ts'));
        ok =
          reg.authorizedKeys.has(pub) &&
          blob.subarray(4, 15).toString() === 'ssh-ed25519' &&
          Math.abs(ts - Date.now() / 1000) < 60 &&
          /^[A-Za-z0-9_-]{22}$/.test(url.searchParams.get('nonce') ?? '') &&
          url.searchParams.get('service') === 'fake-registry' &&
          verify(null, Buffer.from(signed), key, Buffer.from(sig, 'base64'));
      } catch {
        ok = false;
      }
      reg.tokenRequests.push({ url: req.url ?? '', verified: ok });
      if (!ok) return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"errors":[]}');
      const token = randomBytes(12).toString('hex');
      issued.add(token);
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token }));
    }
    const auth = req.headers.authorization ?? '';
    if (!auth.startsWith('Bearer ') || !issued.has(auth.slice(7))) {
      const m = /^\/v2\/([^/]+\/[^/]+)\//.exec(url.pathname);
      res.writeHead(401, {
        'www-authenticate': `Bearer realm="http://${reg.realmHost ?? reg.host}/token",service="fake-registry",scope="repository:${m?.[1] ?? ''}:pull"`,
      });
      return void res.end();
    }
    if (/\/manifests\//.test(url.pathname)) {
      return void res
        .writeHead(200, { 'content-type': 'application/vnd.docker.distribution.manifest.v2+json' })
        .end(manifest);
    }
    const digest = /\/blobs\/(sha256:[0-9a-f]{64})$/.exec(url.pathname)?.[1];
    const body = digest ? blobs.get(digest) : undefined;
    if (!body) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-length': body.length, 'content-type': 'application/octet-stream' }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  reg.host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  reg.close = () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r())));
  return reg;
}

// Ollama's key-signing handshake end to end (reference/ollama-api.md §6.2): the daemon signs the token request
// with $OLLAMA_KEY_DIR/id_ed25519; the fake token server verifies the signature before issuing a token.
describe('registry pull with Ollama key signing (§6.2)', () => {
  let t: TestApp;
  let reg: FakeSignedRegistry;
  let keys: string;
  let manifest: Buffer;
  const saved = { dir: process.env.OLLAMA_KEY_DIR, auth: process.env.OLLAMA_REGISTRY_AUTH };
  const pull = async (model: string) =>
    readNdjson<{ status?: string; error?: string }>(await postJson(`${t.baseUrl}/api/pull`, { model, insecure: true }));

  before(async () => {
    keys = await mkdtemp(join(tmpdir(), 'llamad-keys-'));
    const layer = randomBytes(300_000);
    const config = Buffer.from('{"model_format":"gguf","model_family":"llama"}');
    manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
        config: {
          mediaType: 'application/vnd.docker.container.image.v1+json',
          digest: sha(config),
          size: config.length,
        },
        layers: [{ mediaType: 'application/vnd.ollama.image.model', digest: sha(layer), size: layer.length }],
      }),
    );
    reg = await startSignedRegistry(
      new Map([
        [sha(layer), layer],
        [sha(config), config],
      ]),
      manifest,
    );
    process.env.OLLAMA_REGISTRY_AUTH = '{}';
    t = await createTestApp({ binding: new FakeBinding() });
  });
  after(async () => {
    for (const [k, v] of [
      ['OLLAMA_KEY_DIR', saved.dir],
      ['OLLAMA_REGISTRY_AUTH', saved.auth],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await t?.close();
    await reg?.close();
    await rm(keys, { recursive: true, force: true });
  });

  it('signs with the authorized key: token issued, pull succeeds, manifest byte for byte', async () => {
    process.env.OLLAMA_KEY_DIR = join(keys, 'good');
    const id = await loadOrCreateIdentity(join(keys, 'good'));
    reg.authorizedKeys.add(id.blob.toString('base64'));
    const name = `${reg.host}/library/signed:latest`;
    const records = await pull(name);
    assert.deepEqual(records.at(-1), { status: 'success', done: true }, JSON.stringify(records.at(-1)));
    assert.ok(reg.tokenRequests.length >= 1);
    assert.ok(reg.tokenRequests.every((r) => r.verified));
    assert.match(
      reg.tokenRequests[0].url,
      /^\/token\?nonce=[A-Za-z0-9_-]{22}&scope=repository%3Alibrary%2Fsigned%3Apull&service=fake-registry&ts=\d+$/,
    );
    const path = join(t.modelsDir, 'manifests', reg.host, 'library', 'signed', 'latest');
    assert.deepEqual(await readFile(path), manifest);
  });

  it('a key the server does not know (generated on first use): unauthorized: access denied', async () => {
    process.env.OLLAMA_KEY_DIR = join(keys, 'other');
    reg.tokenRequests.length = 0;
    const records = await pull(`${reg.host}/library/signed:other`);
    assert.deepEqual(records.at(-1), { error: 'unauthorized: access denied' });
    assert.equal(reg.tokenRequests.length, 1);
    assert.equal(reg.tokenRequests[0].verified, false);
    // The identity was generated in OLLAMA_KEY_DIR, with its .pub line.
    const pub = await readFile(join(keys, 'other', 'id_ed25519.pub'), 'utf8');
    assert.match(pub, /^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI[A-Za-z0-9+/=]+ \S+\n$/);
  });

  it('a realm on another host is refused before anything is signed', async () => {
    process.env.OLLAMA_KEY_DIR = join(keys, 'good');
    const port = reg.host.split(':')[1];
    reg.realmHost = `localhost:${port}`;
    reg.tokenRequests.length = 0;
    try {
      const records = await pull(`${reg.host}/library/signed:realm`);
      assert.deepEqual(records.at(-1), {
        error: `realm host "localhost:${port}" does not match original host "${reg.host}"`,
      });
      assert.equal(reg.tokenRequests.length, 0);
    } finally {
      reg.realmHost = undefined;
    }
  });
});
