import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { DaemonConfig } from '../config';
import { BlobFiles } from './blob-files';
import { BlobPins } from './blob-pins';
import { isDigest, Manifest, manifestDigestsOf } from './manifest';
import { ManifestFiles } from './manifest-files';
import type { ModelName } from './model-name';
import {
  BlobPin,
  CommittedManifest,
  CopiedManifest,
  MissingLayerError,
  ModelStore,
  StoredBlob,
  StoredManifest,
  SweepResult,
} from './model-store';
import { storeIo } from './store-files';
import { DEFAULT_STORE_LOCK_TIMING, StoreLock, StoreLockTiming } from './store-lock';

// Kept importable from here, where they were defined before the store was split by job.
export { manifestDigestsOf } from './manifest';
export { MissingLayerError } from './model-store';
export type { BlobPin, StoredBlob, StoredManifest, SweepResult } from './model-store';

/** DI token of an optional StoreLockTiming for the repository (tests). */
export const STORE_LOCK_TIMING = Symbol('STORE_LOCK_TIMING');

/**
 * The default ModelStore (MODEL_STORE): the model store on disk in Ollama's own layout (reference/ollama-api.md
 * §10.1): `<root>/blobs/sha256-<hex>` (BlobFiles) and `<root>/manifests/<host>/<namespace>/<model>/<tag>`
 * (ManifestFiles). Every write is atomic: content goes to a temporary file in the destination directory, then is
 * renamed. The only class that touches these files (ARCHITECTURE.md §4 repository layer); this one adds the lock, the
 * pins and the prunes that keep manifests and blobs consistent.
 *
 * Concurrency: operations that change which blobs are referenced (manifest writes, removals, prunes) run under
 * `exclusive()`, a lock shared with other processes on the same directory (StoreLock, `<root>/.llamad-store.lock`).
 * Work that takes long (downloads, imports, quantizations) runs outside it and `pin()`s the digests it will
 * reference instead; `commitManifest()` re-checks under the lock that every referenced blob exists.
 * Errors never carry a server path (store-errors.ts): file-system failures become InternalError `<action>: <errno
 * text>`.
 */
@Injectable()
export class ModelStoreRepository implements ModelStore {
  private readonly logger = new Logger(ModelStoreRepository.name);
  private readonly lock: StoreLock;
  private readonly pins = new BlobPins((digests) => this.pruneLayers(digests));
  private readonly blobs = new BlobFiles(() => this.root);
  private readonly manifests = new ManifestFiles(() => this.root);

  /**
   * @param lockTiming store lock timing (tests provide STORE_LOCK_TIMING to shrink it; default
   *   DEFAULT_STORE_LOCK_TIMING).
   */
  constructor(
    private readonly config: DaemonConfig,
    @Optional() @Inject(STORE_LOCK_TIMING) lockTiming: StoreLockTiming = DEFAULT_STORE_LOCK_TIMING,
  ) {
    this.lock = new StoreLock(
      () => this.root,
      lockTiming,
      (err) => {
        this.logger.warn(`model store lock: ${err.message}`);
      },
    );
  }

  /**
   * Runs `critical` holding the store lock (in-process queue + `<root>/.llamad-store.lock`; reentrant inside one
   * critical section). Keep it short: reading manifests, checking blobs, writing or removing a few files.
   * @throws ServerBusyError (503) when another process holds the lock past the acquire timeout; what `critical`
   *   throws.
   */
  exclusive<T>(critical: () => Promise<T>): Promise<T> {
    return this.lock.run(critical);
  }

  /** Absolute path of the store lock (a directory while held). */
  get lockPath(): string {
    return this.lock.path;
  }

  /**
   * Pins digests for an in-flight create or pull (see BlobPin). Pins are per process: other daemons see a blob
   * being prepared only through its fresh mtime (the startup sweep spares young files) and commitManifest's check.
   * @param digests `sha256:<hex>` digests to pin at once.
   */
  pin(digests: Iterable<string> = []): BlobPin {
    return this.pins.pin(digests);
  }

  /** Whether a digest is pinned by an in-flight create or pull of this process. */
  isPinned(digest: string): boolean {
    return this.pins.has(digest);
  }

  /** Root directory (OLLAMA_MODELS). */
  get root(): string {
    return this.config.modelsDir;
  }

  /** See ModelStore.blobPath: `sha256:<hex>` → `<root>/blobs/sha256-<hex>`. */
  blobPath(digest: string): string {
    return this.blobs.path(digest);
  }

  /** See ModelStore.blobSize. */
  blobSize(digest: string): Promise<number | null> {
    return this.blobs.size(digest);
  }

  /** See ModelStore.readBlob. */
  readBlob(digest: string): Promise<Buffer> {
    return this.blobs.read(digest);
  }

  /** See ModelStore.importFile (BlobFiles.importFile: hashed while streamed to a temporary file, then renamed). */
  importFile(sourcePath: string, pin?: BlobPin): Promise<StoredBlob> {
    return this.blobs.importFile(sourcePath, pin);
  }

  /** See ModelStore.receiveBlob (POST /api/blobs/:digest, §3.10; BlobFiles.receive). */
  receiveBlob(body: Readable, expected: string): Promise<StoredBlob & { created: boolean }> {
    return this.blobs.receive(body, expected);
  }

  /** See ModelStore.newTempBlobPath: a temporary path inside blobs/ (created if needed). */
  newTempBlobPath(): Promise<string> {
    return this.blobs.newTempPath();
  }

  /** See ModelStore.adoptTempFile. */
  adoptTempFile(tmp: string, pin?: BlobPin): Promise<StoredBlob> {
    return this.blobs.adopt(tmp, pin);
  }

  /** See ModelStore.writeBlob. */
  writeBlob(data: string | Buffer, pin?: BlobPin): Promise<StoredBlob> {
    return this.blobs.write(data, pin);
  }

  /** See ModelStore.removeStaleTempFiles (Ollama's Serve, reference §7.7; BlobFiles.removeStaleTempFiles). */
  removeStaleTempFiles(maxAgeMs: number, now = Date.now()): Promise<string[]> {
    return this.blobs.removeStaleTempFiles(maxAgeMs, now);
  }

  /**
   * Startup prune of orphaned blobs (Ollama's Serve, reference §7.7), under the store lock: deletes every
   * `blobs/sha256-<hex>` file that no manifest references, that no in-flight create or pull of this process has
   * pinned, and whose mtime is at least `minAgeMs` old — a younger file may belong to another daemon's create or
   * pull in progress, or be a blob just uploaded for a create (§10.1: reused blobs get their mtime touched).
   * Nothing at all is deleted when some manifest file cannot be read (it might reference them). Only blobs/ is
   * looked at: partial downloads in `partial/` are never touched.
   * @param minAgeMs age in ms below which a blob is kept (one hour at startup: STALE_TEMP_AGE_MS).
   * @param now current time, ms since the epoch (tests).
   * @returns how many blobs and bytes were removed, or `skipped`.
   * @throws ServerBusyError when the lock cannot be taken; InternalError for a file-system failure.
   */
  async sweepOrphans(minAgeMs: number, now = Date.now()): Promise<SweepResult> {
    const result: SweepResult = { count: 0, bytes: 0, skipped: false };
    if (!(await this.blobs.exists())) return result; // an empty store: no lock (nor models directory) needed
    return this.exclusive(() =>
      storeIo('cannot sweep orphaned blobs', async () => {
        const entries = await this.blobs.list();
        const { used, complete } = await this.referencedDigests();
        if (!complete) return { ...result, skipped: true };
        const keep = (digest: string) => used.has(digest) || this.pins.has(digest);
        return { ...result, ...(await this.blobs.removeUnkept(entries, keep, minAgeMs, now)) };
      }),
    );
  }

  /** See ModelStore.findExisting (Ollama's getExistingName, §10.4). */
  findExisting(name: ModelName): Promise<ModelName | null> {
    return this.manifests.findExisting(name);
  }

  /** See ModelStore.readManifest. */
  readManifest(name: ModelName): Promise<StoredManifest | null> {
    return this.manifests.read(name);
  }

  /**
   * Writes a manifest atomically (temporary file + rename) as Go's encoder would (compact JSON, trailing newline),
   * under the store lock. An existing manifest whose name differs only in case is replaced in place. Does not check
   * the blobs: see commitManifest.
   * @throws InternalError `cannot write manifest of <name>: <errno text>`.
   */
  writeManifest(name: ModelName, manifest: Manifest): Promise<StoredManifest> {
    return this.exclusive(() => this.manifests.write(name, manifest));
  }

  /**
   * Checks, under the store lock, that every blob a manifest references (config and layers) is in blobs/.
   * Callers that write a manifest themselves (pull) call this inside their own exclusive() section, right before.
   * @param what names the model in the error (`model "x:latest"`).
   * @throws MissingLayerError (500) for the first missing blob.
   */
  async requireBlobs(manifest: Manifest, what: string): Promise<void> {
    await this.exclusive(async () => {
      for (const digest of manifestDigestsOf(manifest)) {
        if ((await this.blobSize(digest)) === null) throw new MissingLayerError(digest, what);
      }
    });
  }

  /**
   * Writes a new model's manifest: under the store lock, checks that every referenced blob still exists (another
   * process may have pruned one while the layers were prepared), reads the manifest it replaces, writes the new one
   * atomically, then prunes the replaced manifest's layers that nothing references any more (§3.9 "after success
   * the old manifest's now-unreferenced layers are deleted").
   * @returns the manifest as stored, the one it replaced (if any) and the digests pruned.
   * @throws MissingLayerError (500) when a referenced blob is gone: no manifest is written;
   *   InternalError for a file-system failure.
   */
  async commitManifest(name: ModelName, manifest: Manifest): Promise<CommittedManifest> {
    return this.exclusive(async () => {
      await this.requireBlobs(manifest, `model "${name.toShortString()}"`);
      const replaced = await this.readManifest(name).catch(() => null);
      const stored = await this.writeManifest(name, manifest);
      const pruned =
        replaced && replaced.digest !== stored.digest
          ? await this.pruneLayers(manifestDigestsOf(replaced.manifest))
          : [];
      return { stored, replaced, pruned };
    });
  }

  /** Every valid manifest in the store (files whose four path parts form a valid name); unreadable ones skipped. */
  async listManifests(): Promise<StoredManifest[]> {
    return (await this.manifests.scan()).manifests;
  }

  /**
   * Copies a manifest file byte for byte (Ollama's CopyModel, §3.11): blobs are shared, so the copy has the same
   * digest. The destination is written atomically; an existing destination (matched case-insensitively) is replaced.
   * Runs under the store lock, with the source read again there so that a source deleted meanwhile is not copied.
   * @returns the destination as stored, and the manifest it replaced (if any); null when the source is gone.
   * @throws InternalError `cannot copy manifest: <errno text>`.
   */
  copyManifest(source: StoredManifest, destination: ModelName): Promise<CopiedManifest | null> {
    return this.exclusive(() => this.manifests.copy(source, destination));
  }

  /**
   * Removes a manifest file, then every manifest directory left empty up to (not including) manifests/ (§3.12).
   * Blobs are untouched (see pruneLayers). Runs under the store lock.
   * @throws InternalError `cannot remove manifest: <errno text>`.
   */
  async removeManifest(stored: StoredManifest): Promise<void> {
    await this.exclusive(() => this.manifests.remove(stored));
  }

  /**
   * Deletes the given blobs that no manifest in the store references any more (Ollama's RemoveLayers /
   * deleteUnusedLayers), under the store lock. Blobs pinned by an in-flight create or pull are kept (and pruned
   * when their last pin is released, if still unreferenced). Does nothing at all when some manifest file cannot be
   * read: it might reference them.
   * @returns the digests deleted.
   * @throws ServerBusyError when the lock cannot be taken; InternalError `cannot prune blobs: <errno text>`.
   */
  async pruneLayers(digests: string[]): Promise<string[]> {
    return this.exclusive(() =>
      storeIo('cannot prune blobs', async () => {
        const { used, complete } = await this.referencedDigests();
        if (!complete) return [];
        const removed: string[] = [];
        for (const digest of new Set(digests)) {
          if (used.has(digest) || !isDigest(digest)) continue;
          if (this.pins.has(digest)) {
            this.pins.defer(digest);
            continue;
          }
          await this.blobs.remove(digest);
          removed.push(digest);
        }
        return removed;
      }),
    );
  }

  /** Every digest referenced by a manifest; `complete` is false when some manifest file could not be read. */
  private async referencedDigests(): Promise<{ used: Set<string>; complete: boolean }> {
    const { manifests, unreadable } = await this.manifests.scan();
    const used = new Set<string>();
    for (const m of manifests) for (const d of manifestDigestsOf(m.manifest)) used.add(d);
    return { used, complete: unreadable === 0 };
  }
}
