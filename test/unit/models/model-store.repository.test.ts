import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { DaemonConfig } from '../../../src/config';
import { buildManifest, goJsonEncode, MediaType } from '../../../src/models/manifest';
import { ModelName } from '../../../src/models/model-name';
import { ModelStoreRepository } from '../../../src/models/model-store.repository';

const sha = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

describe('ModelStoreRepository', () => {
  let dir: string;
  let store: ModelStoreRepository;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'llamad-store-'));
    store = new ModelStoreRepository(Object.assign(new DaemonConfig(), { modelsDir: dir }));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes content-addressed blobs named sha256-<hex>', async () => {
    const blob = await store.writeBlob('hello');
    assert.deepEqual(blob, { digest: `sha256:${sha('hello')}`, size: 5 });
    assert.equal(await readFile(join(dir, 'blobs', `sha256-${sha('hello')}`), 'utf8'), 'hello');
    assert.equal(store.blobPath(blob.digest), join(dir, 'blobs', `sha256-${sha('hello')}`));
  });

  it('imports a file by streaming and hashing, leaving no temporary files', async () => {
    const src = join(dir, 'weights.bin');
    const data = Buffer.alloc(3 * 1024 * 1024 + 7, 7);
    await writeFile(src, data);
    const blob = await store.importFile(src);
    assert.deepEqual(blob, { digest: `sha256:${sha(data)}`, size: data.length });
    assert.deepEqual(await readdir(join(dir, 'blobs')), [`sha256-${sha(data)}`]);
    // Importing again reuses the blob.
    assert.deepEqual(await store.importFile(src), blob);
    assert.deepEqual(await readdir(join(dir, 'blobs')), [`sha256-${sha(data)}`]);
  });

  it('writes manifests under manifests/<host>/<namespace>/<model>/<tag> as Go would', async () => {
    const name = ModelName.parse('tiny:v1')!;
    const config = await store.writeBlob('{}');
    const layer = await store.writeBlob('weights');
    const manifest = buildManifest({ mediaType: MediaType.CONFIG, ...config }, [
      { mediaType: MediaType.MODEL, ...layer },
    ]);
    const stored = await store.writeManifest(name, manifest);
    const path = join(dir, 'manifests', 'registry.ollama.ai', 'library', 'tiny', 'v1');
    const bytes = await readFile(path, 'utf8');
    assert.equal(bytes, goJsonEncode(manifest));
    assert.ok(bytes.endsWith('}\n'));
    assert.ok(
      bytes.startsWith('{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",'),
    );
    assert.equal(stored.digest, sha(bytes));
    assert.equal(stored.path, path);
    assert.deepEqual(await readdir(join(dir, 'manifests', 'registry.ollama.ai', 'library', 'tiny')), ['v1']);
  });

  it('finds manifests case-insensitively and keeps the stored spelling', async () => {
    const config = await store.writeBlob('{}');
    await store.writeManifest(
      ModelName.parse('MyModel:Tag')!,
      buildManifest({ mediaType: MediaType.CONFIG, ...config }, []),
    );
    const found = await store.readManifest(ModelName.parse('mymodel:tag')!);
    assert.equal(found?.name.toShortString(), 'MyModel:Tag');
    // Writing under another case replaces the existing file instead of adding a second one.
    await store.writeManifest(
      ModelName.parse('MYMODEL:TAG')!,
      buildManifest({ mediaType: MediaType.CONFIG, ...config }, []),
    );
    assert.deepEqual(await readdir(join(dir, 'manifests', 'registry.ollama.ai', 'library')), ['MyModel']);
    assert.equal(await store.readManifest(ModelName.parse('other')!), null);
  });

  it('lists valid manifests and skips foreign files', async () => {
    const config = await store.writeBlob('{}');
    const m = buildManifest({ mediaType: MediaType.CONFIG, ...config }, []);
    await store.writeManifest(ModelName.parse('a')!, m);
    await store.writeManifest(ModelName.parse('hf.co/user/b:q4')!, m);
    const junk = join(dir, 'manifests', 'registry.ollama.ai', 'library', 'a');
    await writeFile(join(junk, '.tmp-123'), 'partial');
    await mkdir(join(dir, 'manifests', 'registry.ollama.ai', 'library', 'broken'), { recursive: true });
    await writeFile(join(dir, 'manifests', 'registry.ollama.ai', 'library', 'broken', 'latest'), 'not json');
    const names = (await store.listManifests()).map((s) => s.name.toShortString()).sort();
    assert.deepEqual(names, ['a:latest', 'hf.co/user/b:q4']);
  });

  it('reads a store written by another tool (manifest bytes kept verbatim)', async () => {
    const config = await store.writeBlob('{"model_format":"gguf"}');
    const text = JSON.stringify(
      {
        schemaVersion: 2,
        mediaType: MediaType.MANIFEST,
        config: { ...config, mediaType: MediaType.CONFIG },
        layers: [],
      },
      null,
      2,
    );
    const path = join(dir, 'manifests', 'registry.ollama.ai', 'library', 'pulled', 'latest');
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, text);
    const found = await store.readManifest(ModelName.parse('pulled')!);
    assert.equal(found?.digest, sha(text));
    assert.equal(found?.manifest.config.digest, config.digest);
  });
});
