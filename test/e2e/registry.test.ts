import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { RegistryService } from '../../src/registry';
import { FakeBinding } from '../utils/fake-binding';
import { ensureTestModels, TINY_LLAMA_SPM } from '../utils/models';
import { postJson, readNdjson } from '../utils/ndjson';
import { registryMissing, RegistryProxy, RegistryServer, startProxy, startRegistry } from '../utils/registry-server';
import { createTestApp, TestApp } from '../utils/test-app';

interface Progress {
  status?: string;
  digest?: string;
  total?: number;
  completed?: number;
  done?: boolean;
  error?: string;
}
interface ManifestJson {
  config: { digest: string; size: number };
  layers: Array<{ digest: string; size: number; mediaType: string }>;
}

/** Why these tests cannot run here (a program missing), for each test's `skip`; undefined when they can. */
const skip = registryMissing();

// Pull/push (reference/ollama-api.md §3.13, §3.14, §6) against a REAL Docker Distribution registry (Debian
// `docker-registry`, installed by .ci/run; skipped with the install command where it is missing) on loopback; a
// loopback proxy cuts or corrupts blob downloads.
describe('registry pull/push against docker-registry', () => {
  let t: TestApp;
  let registry: RegistryServer;
  let proxy: RegistryProxy;
  let ollama: Ollama;
  let service: RegistryService;
  let name: string;
  let pushedManifest: Buffer;

  const manifestPath = (model: string) => {
    const [host, ns, rest] = model.split('/');
    const [m, tag] = rest.split(':');
    return join(t.modelsDir, 'manifests', host, ns, m, tag);
  };
  const blobFile = (digest: string) => join(t.modelsDir, 'blobs', digest.replace(':', '-'));
  const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
  const pull = async (model: string, extra: object = {}) =>
    readNdjson<Progress>(await postJson(`${t.baseUrl}/api/pull`, { model, insecure: true, ...extra }));
  const del = (model: string) =>
    fetch(`${t.baseUrl}/api/delete`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model }),
    });

  before(async () => {
    if (skip) return;
    ensureTestModels();
    registry = await startRegistry();
    proxy = await startProxy(registry.host);
    t = await createTestApp({ binding: new FakeBinding() });
    service = t.app.get(RegistryService);
    ollama = new Ollama({ host: t.baseUrl });
    name = `${registry.host}/test/tiny:latest`;
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: name,
      modelfile: `FROM ${TINY_LLAMA_SPM}`,
      stream: false,
    });
    assert.equal(res.status, 200, await res.clone().text());
  });
  after(async () => {
    await t?.close();
    await proxy?.close();
    await registry?.stop();
  });

  it('pushes a created model with the spec progress records', { skip }, async () => {
    pushedManifest = await readFile(manifestPath(name));
    const manifest = JSON.parse(pushedManifest.toString()) as ManifestJson;
    const records = await readNdjson<Progress>(
      await postJson(`${t.baseUrl}/api/push`, { model: name, insecure: true }),
    );
    assert.deepEqual(records[0], { status: 'retrieving manifest', done: false });
    assert.deepEqual(records.at(-1), { status: 'success', done: true });
    for (const layer of [...manifest.layers, manifest.config]) {
      const mine = records.filter((r) => r.digest === layer.digest);
      assert.ok(mine.length >= 2, `records for ${layer.digest}`);
      assert.equal(mine[0].status, `pushing layer ${layer.digest.slice(7, 19)}`);
      assert.deepEqual(mine.at(-1), { ...mine[0], completed: layer.size, done: false });
      assert.equal(mine[0].total, layer.size);
    }
    // The registry holds the manifest byte for byte.
    const res = await fetch(`http://${registry.host}/v2/test/tiny/manifests/latest`, {
      headers: { accept: 'application/vnd.docker.distribution.manifest.v2+json' },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), pushedManifest);
  });

  it('pushes again with the ollama client: every blob already present', { skip }, async () => {
    const final = await ollama.push({ model: name, insecure: true, stream: false });
    assert.equal(final.status, 'success');
  });

  it('pulls the model back after a local delete: byte-identical blobs and manifest', { skip }, async () => {
    const manifest = JSON.parse(pushedManifest.toString()) as ManifestJson;
    const before = new Map<string, Buffer>();
    for (const l of [...manifest.layers, manifest.config]) before.set(l.digest, await readFile(blobFile(l.digest)));
    assert.equal((await del(name)).status, 200);
    assert.deepEqual(await readdir(join(t.modelsDir, 'blobs')).then((f) => f.filter((x) => !x.startsWith('.'))), []);

    const seen: Progress[] = [];
    for await (const p of await ollama.pull({ model: name, insecure: true, stream: true })) seen.push(p as Progress);
    assert.equal(seen[0].status, 'pulling manifest');
    assert.equal(seen.at(-1)?.status, 'success');
    const layerRecords = seen.filter((r) => r.status?.startsWith('pulling layer '));
    assert.ok(layerRecords.length >= manifest.layers.length + 1);
    assert.deepEqual(await readFile(manifestPath(name)), pushedManifest);
    for (const [digest, bytes] of before) assert.deepEqual(await readFile(blobFile(digest)), bytes);
    // Partial files are gone once the blobs are in the store.
    assert.deepEqual(await readdir(join(t.modelsDir, 'partial')), []);
    // And it shows up in /api/tags.
    const tags = (await (await fetch(`${t.baseUrl}/api/tags`)).json()) as { models: Array<{ name: string }> };
    assert.ok(tags.models.some((m) => m.name === name));
  });

  it(
    'stream: false answers one {"status":"success"}; a present model pulls with every layer complete',
    { skip },
    async () => {
      const res = await postJson(`${t.baseUrl}/api/pull`, { name, insecure: true, stream: false });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { status: 'success' });
      const records = await pull(name);
      for (const r of records.filter((x) => x.digest)) assert.equal(r.completed, r.total);
    },
  );

  it(
    'resumes an interrupted pull with a Range request (parallel ranged parts, through a cutting proxy)',
    { skip },
    async () => {
      const model = `${proxy.host}/test/tiny:latest`;
      const manifest = JSON.parse(pushedManifest.toString()) as ManifestJson;
      const big = manifest.layers.reduce((a, b) => (a.size > b.size ? a : b));
      // Remove the local blobs so they are downloaded again.
      assert.equal((await del(name)).status, 200);
      service.tuning.attempts = 1;
      service.tuning.partSize = 1024 * 1024; // several parts for the ~8 MiB model layer
      try {
        let cut = false;
        proxy.tamper = (req, chunk, sent) => {
          if (!req.url.includes(big.digest) || cut) return chunk;
          if (sent + chunk.length > 300_000) {
            cut = true;
            return 'cut';
          }
          return chunk;
        };
        proxy.requests.length = 0;
        const first = await pull(model);
        assert.match(first.at(-1)?.error ?? '', /./, 'the first pull fails');
        assert.equal((await readdir(join(t.modelsDir, 'blobs'))).includes(big.digest.replace(':', '-')), false);
        const partials = await readdir(join(t.modelsDir, 'partial'));
        assert.ok(partials.length > 0, 'partial files are kept');

        proxy.tamper = null;
        proxy.requests.length = 0;
        const second = await pull(model);
        assert.equal(second.at(-1)?.status, 'success', JSON.stringify(second.at(-1)));
        const ranged = proxy.requests.filter((r) => r.url.includes(big.digest) && r.range);
        assert.ok(ranged.length > 1, 'parallel ranged parts');
        const starts = ranged.map((r) => Number(/^bytes=(\d+)-/.exec(r.range ?? '')?.[1]));
        assert.ok(
          starts.some((start) => start % (1024 * 1024) !== 0),
          `a part resumed mid-way: ${ranged.map((r) => r.range).join(' ')}`,
        );
        const blob = await readFile(blobFile(big.digest));
        assert.equal(sha(blob), big.digest);
        assert.deepEqual(await readFile(manifestPath(model)), pushedManifest);
      } finally {
        proxy.tamper = null;
        service.tuning.attempts = 4;
        service.tuning.partSize = 100 * 1024 * 1024;
      }
    },
  );

  it('rejects a corrupted blob: digest mismatch, nothing stored, partial deleted', { skip }, async () => {
    const model = `${proxy.host}/test/tiny:corrupt`;
    await del(`${proxy.host}/test/tiny:latest`);
    await del(name);
    // Tag the same manifest under another tag in the registry.
    const put = await fetch(`http://${registry.host}/v2/test/tiny/manifests/corrupt`, {
      method: 'PUT',
      headers: { 'content-type': 'application/vnd.docker.distribution.manifest.v2+json' },
      body: pushedManifest,
    });
    assert.equal(put.status, 201);
    const manifest = JSON.parse(pushedManifest.toString()) as ManifestJson;
    const big = manifest.layers.reduce((a, b) => (a.size > b.size ? a : b));
    proxy.tamper = (req, chunk, sent) => {
      if (!req.url.includes(big.digest) || sent > 0) return chunk;
      const copy = Buffer.from(chunk);
      copy[0] ^= 0xff;
      return copy;
    };
    try {
      const records = await pull(model);
      const error = records.at(-1)?.error ?? '';
      assert.match(
        error,
        new RegExp(`^digest mismatch, file must be downloaded again: want ${big.digest}, got sha256:[0-9a-f]{64}$`),
      );
    } finally {
      proxy.tamper = null;
    }
    const blobs = await readdir(join(t.modelsDir, 'blobs'));
    assert.equal(blobs.includes(big.digest.replace(':', '-')), false);
    assert.deepEqual(
      (await readdir(join(t.modelsDir, 'partial'))).filter((f) => f.includes(big.digest.slice(7))),
      [],
    );
    await assert.rejects(readFile(manifestPath(model)));
  });

  it('unknown model: pull model manifest: file does not exist', { skip }, async () => {
    const records = await pull(`${registry.host}/test/nope:latest`);
    assert.deepEqual(records[0], { status: 'pulling manifest', done: false });
    assert.deepEqual(records.at(-1), { error: 'pull model manifest: file does not exist' });
    await assert.rejects(
      ollama.pull({ model: `${registry.host}/test/nope:latest`, insecure: true }),
      /file does not exist/,
    );
  });

  it(
    'insecure protocol http for an explicit http:// name without insecure; invalid names are 400',
    { skip },
    async () => {
      const res = await postJson(`${t.baseUrl}/api/pull`, {
        model: `http://${registry.host}/test/tiny:latest`,
        stream: false,
      });
      assert.equal(((await res.json()) as { error: string }).error, 'insecure protocol http');
      const bad = await postJson(`${t.baseUrl}/api/pull`, { model: '' });
      assert.equal(bad.status, 400);
      assert.deepEqual(await bad.json(), { error: 'invalid model name' });
      const push = await postJson(`${t.baseUrl}/api/push`, {});
      assert.equal(push.status, 400);
      assert.deepEqual(await push.json(), { error: 'model is required' });
      const missing = await postJson(`${t.baseUrl}/api/push`, {
        model: `${registry.host}/test/absent:latest`,
        insecure: true,
      });
      assert.equal(missing.status, 404);
    },
  );
});
