import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ModelStoreRepository } from '../../src/models/model-store.repository';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

/** A promise plus its resolver. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

// The create-vs-delete race over HTTP (reference/ollama-api.md §3.9 create, §3.12 delete): `create child FROM base`
// is slowed while it writes its layers, `DELETE base` runs meanwhile, and the child must stay servable — its
// blobs are pinned by the in-flight create, so the delete's prune leaves them. Over the FakeBinding (no addon).
describe('create racing delete over HTTP (slowed create)', () => {
  let t: TestApp;
  const binding = new FakeBinding();

  before(async () => {
    t = await createTestApp({ binding });
    const path = join(t.modelsDir, 'base.gguf');
    await writeTinyGguf(path, { chatTemplate: '{{ chatml }}' });
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: 'base',
      modelfile: `FROM ${path}\nSYSTEM base`,
      stream: false,
    });
    assert.equal(res.status, 200);
  });

  after(() => t?.close());

  it('the create-vs-delete race leaves a servable model (test with a slowed import)', async () => {
    // Test seam, on this app's own store instance only: every blob write of the create waits until DELETE base
    // has answered (the production code path is unchanged).
    const store = t.app.get(ModelStoreRepository);
    const writing = gate();
    const deleted = gate();
    const original = store.writeBlob.bind(store);
    store.writeBlob = async (...args) => {
      writing.open();
      await deleted.promise;
      return original(...args);
    };
    try {
      const create = postJson(`${t.baseUrl}/api/create`, {
        model: 'child',
        modelfile: 'FROM base\nSYSTEM child',
        stream: false,
      });
      await writing.promise; // the create is past its checks and copying layers
      const del = await fetch(`${t.baseUrl}/api/delete`, {
        method: 'DELETE',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'base' }),
      });
      assert.equal(del.status, 200);
      deleted.open();
      const res = await create;
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { status: 'success', done: true });
    } finally {
      store.writeBlob = original;
    }

    const tags = (await (await fetch(`${t.baseUrl}/api/tags`)).json()) as { models: Array<{ name: string }> };
    assert.deepEqual(
      tags.models.map((m) => m.name),
      ['child:latest'],
    );

    const show = await postJson(`${t.baseUrl}/api/show`, { model: 'child' });
    assert.equal(show.status, 200, await show.clone().text());
    assert.equal(((await show.json()) as { system: string }).system, 'child');

    const manifestPath = join(t.modelsDir, 'manifests', 'registry.ollama.ai', 'library', 'child', 'latest');
    const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as {
      config: { digest: string; size: number };
      layers: Array<{ digest: string; size: number }>;
    };
    for (const l of [manifest.config, ...manifest.layers]) {
      const info = await stat(join(t.modelsDir, 'blobs', l.digest.replace(':', '-'))).catch(() => null);
      assert.ok(info?.isFile(), `blob ${l.digest} exists`);
      assert.equal(info?.size, l.size);
    }

    binding.script = () => ({ pieces: ['still', ' here'] });
    const gen = await postJson(`${t.baseUrl}/api/generate`, { model: 'child', prompt: 'Hi', stream: false });
    assert.equal(gen.status, 200, await gen.clone().text());
    assert.equal(((await gen.json()) as { response: string }).response, 'still here');
  });
});
