import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import { InternalError, ServerBusyError } from '../../../src/common/errors';
import { buildManifest, MediaType } from '../../../src/models/manifest';
import { ModelName } from '../../../src/models/model-name';
import { MissingLayerError, ModelStoreRepository } from '../../../src/models/model-store.repository';
import { ModelLifecycleService, STALE_TEMP_AGE_MS } from '../../../src/models/model-lifecycle.service';
import { describeIoError, redactPaths, storeError } from '../../../src/models/store-errors';
import { STORE_LOCK_NAME, StoreLockTiming } from '../../../src/models/store-lock';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';
import { newModelsService } from '../../utils/models-service';

/** Short lock timing (proper-lockfile's minimum stale time is 2 s). */
const FAST: StoreLockTiming = { staleMs: 2000, updateMs: 1000, acquireTimeoutMs: 300 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A promise plus its resolver (a gate a test opens). */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

// The store's concurrency rules (reference/ollama-api.md §3.12 delete, §7.7 startup prune): the cross-process store
// lock, pins of in-flight creates, the commit check, and the startup sweep of orphaned blobs.
describe('model store concurrency', () => {
  let bed: InferenceTestbed;
  let store: ModelStoreRepository;

  beforeEach(async () => {
    bed = await createInferenceTestbed();
    store = bed.store;
  });

  afterEach(() => bed.close());

  const manifestOf = async (...contents: string[]) => {
    const config = await store.writeBlob(JSON.stringify({ layers: contents }));
    const layers = [];
    for (const c of contents) layers.push({ mediaType: MediaType.SYSTEM, ...(await store.writeBlob(c)) });
    return buildManifest({ mediaType: MediaType.CONFIG, ...config }, layers);
  };
  const exists = async (digest: string) => (await store.blobSize(digest)) !== null;

  describe('prune and pins', () => {
    it('keeps pinned blobs, prunes the rest, and prunes a deferred blob when its last pin goes', async () => {
      const a = await store.writeBlob('a');
      const b = await store.writeBlob('b');
      const pin1 = store.pin([a.digest]);
      const pin2 = store.pin([a.digest]);
      assert.deepEqual(await store.pruneLayers([a.digest, b.digest]), [b.digest]);
      assert.equal(await exists(a.digest), true);
      assert.equal(await exists(b.digest), false);
      await pin1.release();
      assert.equal(await exists(a.digest), true, 'still pinned by pin2');
      await pin2.release();
      assert.equal(await exists(a.digest), false, 'pruned once unpinned and unreferenced');
      await pin2.release(); // idempotent
    });

    it('does not prune a deferred blob that a manifest references by the time the pin is released', async () => {
      const manifest = await manifestOf('shared');
      const layer = manifest.layers[0].digest;
      const pin = store.pin([layer]);
      assert.deepEqual(await store.pruneLayers([layer]), []);
      await store.commitManifest(ModelName.parse('child')!, manifest);
      await pin.release();
      assert.equal(await exists(layer), true);
    });

    it('pins a blob written with a pin before it appears (writeBlob, importFile)', async () => {
      const pin = store.pin();
      const blob = await store.writeBlob('pinned on write', pin);
      assert.equal(store.isPinned(blob.digest), true);
      await pin.release();
      assert.equal(store.isPinned(blob.digest), false);
    });

    it('never prunes a referenced blob, and prunes nothing while a manifest is unreadable', async () => {
      const manifest = await manifestOf('kept');
      await store.writeManifest(ModelName.parse('m')!, manifest);
      const loose = await store.writeBlob('loose');
      const dir = join(bed.config.modelsDir, 'manifests', 'registry.ollama.ai', 'library', 'broken');
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'latest'), 'not json');
      assert.deepEqual(await store.pruneLayers([manifest.layers[0].digest, loose.digest]), []);
      await rm(dir, { recursive: true });
      assert.deepEqual(await store.pruneLayers([manifest.layers[0].digest, loose.digest]), [loose.digest]);
    });
  });

  describe('commitManifest', () => {
    it('writes nothing and fails with MissingLayerError when a referenced blob is gone', async () => {
      const manifest = await manifestOf('will vanish');
      await rm(store.blobPath(manifest.layers[0].digest));
      await assert.rejects(store.commitManifest(ModelName.parse('x')!, manifest), (err: unknown) => {
        assert.ok(err instanceof MissingLayerError);
        assert.ok(err instanceof InternalError, 'a 500');
        assert.match(err.message, /^layer sha256:[0-9a-f]{64} of model "x:latest" was removed from the model store/);
        assert.ok(!err.message.includes(bed.config.modelsDir));
        return true;
      });
      assert.equal(await store.readManifest(ModelName.parse('x')!), null);
    });

    it('prunes the layers of the manifest it replaces', async () => {
      const first = await manifestOf('v1');
      const name = ModelName.parse('m')!;
      await store.commitManifest(name, first);
      const second = await manifestOf('v2');
      const { replaced, pruned } = await store.commitManifest(name, second);
      assert.ok(replaced);
      assert.deepEqual(pruned, [first.config.digest, first.layers[0].digest]);
    });
  });

  describe('store lock', () => {
    it('serializes critical sections of one process (FIFO) and is reentrant inside one', async () => {
      let active = 0;
      let maxActive = 0;
      const order: number[] = [];
      const section = (i: number) =>
        store.exclusive(async () => {
          active++;
          maxActive = Math.max(maxActive, active);
          await sleep(5);
          // A nested section runs at once instead of deadlocking.
          await store.exclusive(() => sleep(1));
          order.push(i);
          active--;
        });
      await Promise.all([0, 1, 2, 3, 4].map(section));
      assert.equal(maxActive, 1);
      assert.deepEqual(order, [0, 1, 2, 3, 4]);
    });

    it('holds <models>/.llamad-store.lock while a section runs and removes it after, also on errors', async () => {
      const lockDir = join(bed.config.modelsDir, STORE_LOCK_NAME);
      assert.equal(store.lockPath, lockDir);
      await store.exclusive(async () => {
        assert.ok((await stat(lockDir)).isDirectory());
      });
      await assert.rejects(stat(lockDir));
      await assert.rejects(
        store.exclusive(() => Promise.reject(new Error('boom'))),
        /boom/,
      );
      await assert.rejects(stat(lockDir));
      await store.exclusive(() => Promise.resolve()); // the queue goes on after a failure
    });

    it('serializes two stores on one directory (two daemons) through the lock file', async () => {
      const other = new ModelStoreRepository(bed.config, { ...FAST, acquireTimeoutMs: 10_000 });
      let active = 0;
      let maxActive = 0;
      const section = (s: ModelStoreRepository) =>
        s.exclusive(async () => {
          active++;
          maxActive = Math.max(maxActive, active);
          await sleep(20);
          active--;
        });
      await Promise.all([section(store), section(other), section(store), section(other)]);
      assert.equal(maxActive, 1);
    });

    it('answers 503 when another process keeps a fresh lock past the acquire timeout', async () => {
      const holder = new ModelStoreRepository(bed.config, FAST);
      const waiting = new ModelStoreRepository(bed.config, FAST);
      const release = gate();
      const held = holder.exclusive(() => release.promise);
      await sleep(20);
      await assert.rejects(
        waiting.exclusive(() => Promise.resolve('never')),
        (err: unknown) => {
          assert.ok(err instanceof ServerBusyError);
          assert.match(err.message, /model store is locked by another process/);
          assert.ok(!err.message.includes(bed.config.modelsDir));
          return true;
        },
      );
      release.open();
      await held;
      assert.equal(await waiting.exclusive(() => Promise.resolve('now')), 'now');
    });

    it('takes over the lock of a daemon killed with SIGKILL while holding it (stale after staleMs)', async () => {
      // A child process holds the store lock forever (same StoreLock, compiled), then dies without releasing it.
      // The interval keeps it alive (the lock's own timers are unref'd): exiting on its own would release the lock.
      const child = spawn(
        process.execPath,
        [
          '-e',
          `const { StoreLock } = require(${JSON.stringify(require.resolve('../../../src/models/store-lock'))});
           setInterval(() => {}, 60_000);
           new StoreLock(() => ${JSON.stringify(bed.config.modelsDir)}, ${JSON.stringify(FAST)})
             .run(() => { console.log('locked'); return new Promise(() => {}); });`,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
        child.once('exit', () => reject(new Error('child exited before locking')));
      });
      const lockDir = join(bed.config.modelsDir, STORE_LOCK_NAME);
      assert.ok((await stat(lockDir)).isDirectory(), 'the holder made its lock');
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      const next = new ModelStoreRepository(bed.config, { ...FAST, acquireTimeoutMs: 10_000 });
      const started = Date.now();
      assert.equal(await next.exclusive(() => Promise.resolve('acquired')), 'acquired');
      assert.ok(Date.now() - started < FAST.staleMs + 2000, `taken over in ${Date.now() - started} ms`);
    });

    it('takes over a stale lock left by a killed process', async () => {
      const lockDir = join(bed.config.modelsDir, STORE_LOCK_NAME);
      await mkdir(lockDir, { recursive: true });
      const old = new Date(Date.now() - 60_000);
      await utimes(lockDir, old, old);
      const fresh = new ModelStoreRepository(bed.config, FAST);
      const started = Date.now();
      assert.equal(await fresh.exclusive(() => Promise.resolve('acquired')), 'acquired');
      assert.ok(Date.now() - started < 2000);
      await assert.rejects(stat(lockDir), 'released after use');
    });
  });

  describe('startup sweep of orphaned blobs', () => {
    it('deletes old orphans; keeps fresh orphans, referenced and pinned blobs, temp files and partial/', async () => {
      const blobs = join(bed.config.modelsDir, 'blobs');
      const referenced = await manifestOf('referenced');
      await store.writeManifest(ModelName.parse('m')!, referenced);
      const oldOrphan = await store.writeBlob('old orphan');
      const freshOrphan = await store.writeBlob('fresh orphan');
      const pinnedOrphan = await store.writeBlob('pinned orphan');
      const partialDir = join(bed.config.modelsDir, 'partial');
      await mkdir(partialDir, { recursive: true });
      const partial = join(partialDir, `sha256-${'b'.repeat(64)}-partial`);
      await writeFile(partial, 'half');
      const old = new Date(Date.now() - STALE_TEMP_AGE_MS - 60_000);
      for (const d of [oldOrphan.digest, pinnedOrphan.digest, referenced.config.digest, referenced.layers[0].digest]) {
        await utimes(store.blobPath(d), old, old);
      }
      await utimes(partial, old, old);
      const pin = store.pin([pinnedOrphan.digest]);
      await new ModelLifecycleService(store).onModuleInit();
      const left = await readdir(blobs);
      const name = (d: string) => d.replace(':', '-');
      assert.ok(!left.includes(name(oldOrphan.digest)), 'old orphan swept');
      for (const d of [
        freshOrphan.digest,
        pinnedOrphan.digest,
        referenced.config.digest,
        referenced.layers[0].digest,
      ]) {
        assert.ok(left.includes(name(d)), `${d} kept`);
      }
      assert.deepEqual(await readdir(partialDir), [`sha256-${'b'.repeat(64)}-partial`]);
      await pin.release();
    });

    it('reports counts and bytes, and sweeps nothing when a manifest cannot be read', async () => {
      const orphan = await store.writeBlob('12345');
      const old = new Date(Date.now() - STALE_TEMP_AGE_MS - 1000);
      await utimes(store.blobPath(orphan.digest), old, old);
      const dir = join(bed.config.modelsDir, 'manifests', 'registry.ollama.ai', 'library', 'broken');
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'latest'), '{');
      assert.deepEqual(await store.sweepOrphans(STALE_TEMP_AGE_MS), { count: 0, bytes: 0, skipped: true });
      await rm(dir, { recursive: true });
      assert.deepEqual(await store.sweepOrphans(STALE_TEMP_AGE_MS), { count: 1, bytes: 5, skipped: false });
    });
  });

  describe('create racing delete', () => {
    it('a delete of the base while the create writes its layers leaves the child servable (pinned base blobs)', async () => {
      await bed.createModel('base', 'SYSTEM base');
      const plan = await bed.models.prepareCreate({ model: 'child', modelfile: 'FROM base\nSYSTEM child' });
      const writing = gate();
      const proceed = gate();
      const original = store.writeBlob.bind(store);
      store.writeBlob = async (...args) => {
        writing.open();
        await proceed.promise;
        return original(...args);
      };
      try {
        const created = lastValueFrom(bed.models.create(plan).pipe(toArray()));
        await writing.promise;
        await bed.models.delete('base');
        proceed.open();
        assert.equal((await created).at(-1)?.status, 'success');
      } finally {
        store.writeBlob = original;
      }
      const child = await bed.models.resolve('child');
      for (const d of [child.manifest.config.digest, ...child.manifest.layers.map((l) => l.digest)]) {
        assert.ok(await exists(d), `${d} exists`);
      }
      await bed.models.show('child', false);
      await assert.rejects(bed.models.resolve('base'));
    });

    it('fails cleanly (nothing written) when another process removes a base blob before the commit', async () => {
      await bed.createModel('base', 'SYSTEM base');
      // A second daemon on the same store: its pins are its own, so its delete prunes the base's blobs.
      const otherDaemon = newModelsService(new ModelStoreRepository(bed.config));
      const plan = await bed.models.prepareCreate({ model: 'child', modelfile: 'FROM base\nSYSTEM child' });
      const writing = gate();
      const proceed = gate();
      const original = store.writeBlob.bind(store);
      store.writeBlob = async (...args) => {
        writing.open();
        await proceed.promise;
        return original(...args);
      };
      try {
        const created = lastValueFrom(bed.models.create(plan).pipe(toArray()));
        await writing.promise;
        await otherDaemon.delete('base');
        proceed.open();
        await assert.rejects(created, (err: unknown) => {
          assert.ok(err instanceof MissingLayerError);
          assert.match(err.message, /of model "child:latest" was removed from the model store \(by another process\)/);
          return true;
        });
      } finally {
        store.writeBlob = original;
      }
      assert.equal(await store.readManifest(ModelName.parse('child')!), null);
    });
  });

  describe('error texts without server paths', () => {
    it('describes file-system errors by errno, GGUF errors by detail, and redacts other absolute paths', async () => {
      const enoent = await stat(join(bed.dir, 'missing')).catch((e: unknown) => e);
      assert.equal(describeIoError(enoent), 'no such file or directory');
      const wrapped = storeError(enoent, 'cannot read blob');
      assert.ok(wrapped instanceof InternalError);
      assert.equal(wrapped.message, 'cannot read blob: no such file or directory');
      assert.equal(redactPaths(`failed to open '/srv/models/x.gguf': bad`), `failed to open '<path>': bad`);
      assert.equal(redactPaths('see http://host/a/b and C:\\m\\x.gguf'), 'see http://host/a/b and <path>');
    });

    it('show of a model whose weights blob vanished names the digest, not the store path', async () => {
      await bed.createModel('m');
      const model = await bed.models.resolve('m');
      await rm(model.modelPath);
      const fresh = newModelsService(store); // no cached GGUF facts
      await assert.rejects(fresh.show('m', false), (err: unknown) => {
        assert.ok(err instanceof InternalError);
        assert.match(err.message, /^cannot read model weights sha256:[0-9a-f]{64}: no such file or directory$/);
        assert.ok(!err.message.includes(bed.dir));
        return true;
      });
    });
  });
});
