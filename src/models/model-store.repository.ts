import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readFile, readdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DigestMismatchError, InternalError } from '../common/errors';
import { DaemonConfig } from '../config';
import { goJsonEncode, isDigest, Manifest } from './manifest';
import { ModelName } from './model-name';
import { storeError } from './store-errors';
import { DEFAULT_STORE_LOCK_TIMING, StoreLock, StoreLockTiming } from './store-lock';

/** A blob written to or found in the store. */
export interface StoredBlob {
  /** `sha256:<hex>`. */
  digest: string;
  /** Bytes. */
  size: number;
}

/** A manifest read from disk. */
export interface StoredManifest {
  /** The name with the case used on disk. */
  name: ModelName;
  manifest: Manifest;
  /** Hex sha256 of the manifest file's bytes: the model "digest" of /api/tags (§1.4). */
  digest: string;
  /** The manifest file's mtime. */
  modifiedAt: Date;
  /** Absolute path of the manifest file. */
  path: string;
}

/**
 * Digests an in-flight create or pull will reference (ModelStoreRepository.pin): the prune leaves them alone until
 * released, so a concurrent delete cannot remove a blob between the moment a new manifest's layers are chosen and
 * the moment the manifest is written.
 */
export interface BlobPin {
  /** Pins more digests (`sha256:<hex>`); a no-op after release(). */
  add(...digests: string[]): void;
  /**
   * Unpins everything this pin holds (idempotent). Blobs a prune skipped only because of this pin, and that no
   * manifest and no other pin references by now, are pruned then (under the store lock); failures are ignored
   * (the next startup sweep removes what is left).
   */
  release(): Promise<void>;
}

/** What the startup sweep of orphaned blobs removed. */
export interface SweepResult {
  /** Orphaned blobs deleted. */
  count: number;
  /** Their total size, bytes. */
  bytes: number;
  /** True when the sweep did not run because some manifest file could not be read (it might reference blobs). */
  skipped: boolean;
}

/**
 * A manifest about to be written references a blob that is no longer in the store: another process (a second
 * daemon's delete or startup sweep) removed it. Nothing was written. 500 (Ollama has no equivalent).
 */
export class MissingLayerError extends InternalError {
  constructor(
    readonly digest: string,
    what: string,
  ) {
    super(
      `layer ${digest} of ${what} was removed from the model store (by another process) before its manifest was ` +
        'written; nothing was written, try again',
    );
  }
}

/** DI token of an optional StoreLockTiming for the repository (tests). */
export const STORE_LOCK_TIMING = Symbol('STORE_LOCK_TIMING');

/** Temporary files start with a dot: never a valid tag or digest name, so listings and Ollama's prune skip them. */
function tempName(): string {
  return `.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
}

/**
 * The model store on disk in Ollama's own layout (reference/ollama-api.md §10.1):
 * `<root>/blobs/sha256-<hex>` (content-addressed, mode 0644) and `<root>/manifests/<host>/<namespace>/<model>/<tag>`.
 * Every write is atomic: content goes to a temporary file in the destination directory, then is renamed.
 * The only class that touches these files (ARCHITECTURE.md §4 repository layer).
 *
 * Concurrency: operations that change which blobs are referenced (manifest writes, removals, prunes) run under
 * `exclusive()`, a lock shared with other processes on the same directory (StoreLock, `<root>/.llamad-store.lock`).
 * Work that takes long (downloads, imports, quantizations) runs outside it and `pin()`s the digests it will
 * reference instead; `commitManifest()` re-checks under the lock that every referenced blob exists.
 * Errors never carry a server path (store-errors.ts): file-system failures become InternalError `<action>: <errno
 * text>`.
 */
@Injectable()
export class ModelStoreRepository {
  private readonly logger = new Logger(ModelStoreRepository.name);
  private readonly lock: StoreLock;
  /** Pinned digest → number of live pins holding it. */
  private readonly pins = new Map<string, number>();
  /** Unreferenced digests a prune left only because they were pinned: pruned when their last pin goes. */
  private readonly deferred = new Set<string>();

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
    const held = new Set<string>();
    let released = false;
    const add = (...more: string[]) => {
      if (released) return;
      for (const d of more) {
        if (held.has(d)) continue;
        held.add(d);
        this.pins.set(d, (this.pins.get(d) ?? 0) + 1);
      }
    };
    add(...digests);
    return {
      add,
      release: async () => {
        if (released) return;
        released = true;
        const freed: string[] = [];
        for (const d of held) {
          const n = (this.pins.get(d) ?? 1) - 1;
          if (n > 0) {
            this.pins.set(d, n);
            continue;
          }
          this.pins.delete(d);
          if (this.deferred.delete(d)) freed.push(d);
        }
        if (freed.length > 0) await this.pruneLayers(freed).catch(() => undefined);
      },
    };
  }

  /** Whether a digest is pinned by an in-flight create or pull of this process. */
  isPinned(digest: string): boolean {
    return this.pins.has(digest);
  }

  /** Root directory (OLLAMA_MODELS). */
  get root(): string {
    return this.config.modelsDir;
  }

  private get blobsDir(): string {
    return join(this.root, 'blobs');
  }

  private get manifestsDir(): string {
    return join(this.root, 'manifests');
  }

  /**
   * Absolute path of a blob (`sha256:<hex>` → `<root>/blobs/sha256-<hex>`).
   * @throws InternalError for a malformed digest (digests come from manifests, never straight from users).
   */
  blobPath(digest: string): string {
    if (!isDigest(digest)) throw new InternalError(`invalid digest format: ${digest}`);
    return join(this.blobsDir, digest.replace(':', '-'));
  }

  /** Size in bytes of a blob, or null when it is missing. */
  async blobSize(digest: string): Promise<number | null> {
    try {
      const s = await stat(this.blobPath(digest));
      return s.isFile() ? s.size : null;
    } catch {
      return null;
    }
  }

  /**
   * Reads a whole blob (templates, params, config: small layers).
   * @throws InternalError `cannot read blob sha256:…: <errno text>`.
   */
  async readBlob(digest: string): Promise<Buffer> {
    return readFile(this.blobPath(digest)).catch((err: unknown) => {
      throw storeError(err, `cannot read blob ${digest}`);
    });
  }

  /**
   * Moves a finished temporary file to its blob path (§10.1). An existing blob with that name has the same bytes;
   * replacing it by rename (atomic) rather than keeping it means the blob is there, with a fresh mtime, the moment
   * this returns, even if a prune removed the old file meanwhile. `pin` (if any) gets the digest first.
   */
  private async commitBlob(tmp: string, digest: string, pin?: BlobPin): Promise<void> {
    pin?.add(digest);
    await rename(tmp, this.blobPath(digest));
  }

  /**
   * Copies a file into the blob store, hashing while streaming to a temporary file in blobs/, then renaming
   * (§10.1). Reading never loads the whole file in memory.
   * @param pin pinned with the digest before the blob appears (in-flight creates).
   * @returns its digest and size in bytes.
   * @throws InternalError `cannot import file: <errno text>` (the source's path is not repeated).
   */
  async importFile(sourcePath: string, pin?: BlobPin): Promise<StoredBlob> {
    return this.io('cannot import file', async () => {
      await mkdir(this.blobsDir, { recursive: true });
      const tmp = join(this.blobsDir, tempName());
      try {
        const { digest, size } = await hashCopy(createReadStream(sourcePath), tmp);
        await this.commitBlob(tmp, digest, pin);
        return { digest, size };
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
    });
  }

  /**
   * Streams an uploaded body into the store (POST /api/blobs/:digest, §3.10): written to a temporary file in blobs/
   * while hashed, fsynced, compared with `expected`, then renamed. Nothing is buffered in memory.
   * @param expected `sha256:<hex>` (lower-case hex).
   * @returns the blob and whether it was new (false when an identical blob already existed).
   * @throws DigestMismatchError (400) `digest mismatch, expected "sha256:…", got "sha256:…"` (the temporary file is
   *   removed); InternalError `cannot store blob: <errno or stream text>` (the temporary file is removed).
   */
  async receiveBlob(body: Readable, expected: string): Promise<StoredBlob & { created: boolean }> {
    return this.io('cannot store blob', async () => {
      await mkdir(this.blobsDir, { recursive: true });
      const tmp = this.tempBlobPath();
      try {
        const { digest, size } = await hashCopy(body, tmp);
        if (digest !== expected) {
          throw new DigestMismatchError(expected, digest);
        }
        const existed = (await this.blobSize(digest)) !== null;
        await this.commitBlob(tmp, digest);
        return { digest, size, created: !existed };
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
    });
  }

  /**
   * A fresh temporary path inside blobs/ (created if needed) for producers that write a file themselves (the
   * quantizer); hand it to adoptTempFile() when complete, or remove it.
   */
  async newTempBlobPath(): Promise<string> {
    await this.io('cannot create blobs directory', () => mkdir(this.blobsDir, { recursive: true }));
    return this.tempBlobPath();
  }

  private tempBlobPath(): string {
    return join(this.blobsDir, tempName());
  }

  /**
   * Turns a complete temporary file from newTempBlobPath() into a blob: hashes it (streamed), fsyncs, renames.
   * The temporary file is gone afterwards, whatever happens.
   * @param pin pinned with the digest before the blob appears.
   * @throws InternalError `cannot store blob: <errno text>`.
   */
  async adoptTempFile(tmp: string, pin?: BlobPin): Promise<StoredBlob> {
    return this.io('cannot store blob', async () => {
      try {
        const hash = createHash('sha256');
        let size = 0;
        for await (const chunk of createReadStream(tmp)) {
          hash.update(chunk as Buffer);
          size += (chunk as Buffer).length;
        }
        await fsyncFile(tmp);
        const digest = `sha256:${hash.digest('hex')}`;
        await this.commitBlob(tmp, digest, pin);
        return { digest, size };
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
    });
  }

  /**
   * Startup hygiene (Ollama's Serve, reference §7.7): deletes files in blobs/ whose name is not a blob name
   * (`sha256-<64 hex>`) — interrupted uploads, imports, quantizations, downloads — when older than `maxAgeMs`.
   * Valid blobs are never touched here, referenced or not (see sweepOrphans).
   * @returns the file names removed.
   */
  async removeStaleTempFiles(maxAgeMs: number, now = Date.now()): Promise<string[]> {
    let entries: string[];
    try {
      entries = await readdir(this.blobsDir);
    } catch {
      return [];
    }
    const removed: string[] = [];
    for (const entry of entries) {
      if (BLOB_FILE_NAME.test(entry)) continue;
      const path = join(this.blobsDir, entry);
      const info = await stat(path).catch(() => null);
      if (!info?.isFile() || now - info.mtimeMs < maxAgeMs) continue;
      await rm(path, { force: true });
      removed.push(entry);
    }
    return removed;
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
    const exists = await stat(this.blobsDir).then(
      () => true,
      () => false,
    );
    if (!exists) return result; // an empty store: no lock (nor models directory) needed
    return this.exclusive(() =>
      this.io('cannot sweep orphaned blobs', async () => {
        const entries = await readdir(this.blobsDir);
        const { used, complete } = await this.referencedDigests();
        if (!complete) return { ...result, skipped: true };
        for (const entry of entries) {
          if (!BLOB_FILE_NAME.test(entry)) continue;
          const digest = entry.replace('-', ':');
          if (used.has(digest) || this.pins.has(digest)) continue;
          const path = join(this.blobsDir, entry);
          const info = await stat(path).catch(() => null);
          if (!info?.isFile() || now - info.mtimeMs < minAgeMs) continue;
          await rm(path, { force: true });
          result.count++;
          result.bytes += info.size;
        }
        return result;
      }),
    );
  }

  /**
   * Writes bytes as a blob (template, system, params, messages, license, config layers).
   * @param pin pinned with the digest before the blob appears.
   * @throws InternalError `cannot write blob: <errno text>`.
   */
  async writeBlob(data: string | Buffer, pin?: BlobPin): Promise<StoredBlob> {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    return this.io('cannot write blob', async () => {
      await mkdir(this.blobsDir, { recursive: true });
      const tmp = join(this.blobsDir, tempName());
      try {
        await writeFileSynced(tmp, bytes);
        await this.commitBlob(tmp, digest, pin);
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
      return { digest, size: bytes.length };
    });
  }

  /**
   * Finds the on-disk spelling of a name: each path component is matched case-insensitively against the existing
   * manifest tree (an exact match wins), like Ollama's getExistingName (§10.4).
   * @returns the existing name, or null when no manifest matches.
   */
  async findExisting(name: ModelName): Promise<ModelName | null> {
    let dir = this.manifestsDir;
    const found: string[] = [];
    for (const [i, part] of name.manifestSegments().entries()) {
      let entries: string[];
      try {
        entries = await readdir(dir);
      } catch {
        return null;
      }
      const match = entries.includes(part) ? part : entries.find((e) => e.toLowerCase() === part.toLowerCase());
      if (match === undefined) return null;
      found.push(match);
      dir = join(dir, match);
      if (i === 3) {
        const s = await stat(dir).catch(() => null);
        if (!s?.isFile()) return null;
      }
    }
    return ModelName.fromParts(found[0], found[1], found[2], found[3]);
  }

  private manifestPath(name: ModelName): string {
    return join(this.manifestsDir, ...name.manifestSegments());
  }

  /**
   * Reads the manifest of a name (matched case-insensitively).
   * @returns null when there is none.
   * @throws InternalError when the file exists but is not a manifest or cannot be read.
   */
  async readManifest(name: ModelName): Promise<StoredManifest | null> {
    const existing = await this.findExisting(name);
    if (!existing) return null;
    return this.io(`cannot read manifest of ${existing.toShortString()}`, () => this.readManifestAt(existing));
  }

  private async readManifestAt(name: ModelName): Promise<StoredManifest> {
    const path = this.manifestPath(name);
    const [bytes, info] = await Promise.all([readFile(path), stat(path)]);
    let manifest: Manifest;
    try {
      manifest = JSON.parse(bytes.toString('utf8')) as Manifest;
    } catch (err) {
      throw new InternalError(`manifest ${name.toShortString()} is not valid JSON`, { cause: err });
    }
    if (!manifest || typeof manifest !== 'object' || !Array.isArray(manifest.layers) || !manifest.config) {
      throw new InternalError(`manifest ${name.toShortString()} is malformed`);
    }
    return {
      name,
      manifest,
      digest: createHash('sha256').update(bytes).digest('hex'),
      modifiedAt: info.mtime,
      path,
    };
  }

  /**
   * Writes a manifest atomically (temporary file + rename) as Go's encoder would (compact JSON, trailing newline).
   * An existing manifest whose name differs only in case is replaced in place. Does not check the blobs: see
   * commitManifest.
   * @throws InternalError `cannot write manifest of <name>: <errno text>`.
   */
  async writeManifest(name: ModelName, manifest: Manifest): Promise<StoredManifest> {
    return this.exclusive(() =>
      this.io(`cannot write manifest of ${name.toShortString()}`, async () => {
        const target = (await this.findExisting(name)) ?? name;
        const path = this.manifestPath(target);
        await mkdir(dirname(path), { recursive: true });
        const tmp = join(dirname(path), tempName());
        try {
          await writeFileSynced(tmp, Buffer.from(goJsonEncode(manifest), 'utf8'));
          await rename(tmp, path);
        } catch (err) {
          await rm(tmp, { force: true });
          throw err;
        }
        return this.readManifestAt(target);
      }),
    );
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
  async commitManifest(
    name: ModelName,
    manifest: Manifest,
  ): Promise<{ stored: StoredManifest; replaced: StoredManifest | null; pruned: string[] }> {
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
    return (await this.scanManifests()).manifests;
  }

  /**
   * Copies a manifest file byte for byte (Ollama's CopyModel, §3.11): blobs are shared, so the copy has the same
   * digest. The destination is written atomically; an existing destination (matched case-insensitively) is replaced.
   * Runs under the store lock, with the source read again there so that a source deleted meanwhile is not copied.
   * @returns the destination as stored, and the manifest it replaced (if any); null when the source is gone.
   * @throws InternalError `cannot copy manifest: <errno text>`.
   */
  async copyManifest(
    source: StoredManifest,
    destination: ModelName,
  ): Promise<{ stored: StoredManifest; replaced: StoredManifest | null } | null> {
    return this.exclusive(() =>
      this.io('cannot copy manifest', async () => {
        const bytes = await readFile(source.path).catch((err: NodeJS.ErrnoException) => {
          if (err.code === 'ENOENT') return null;
          throw err;
        });
        if (bytes === null) return null;
        const existing = await this.findExisting(destination);
        const replaced = existing ? await this.readManifestAt(existing).catch(() => null) : null;
        const target = existing ?? destination;
        const path = this.manifestPath(target);
        await mkdir(dirname(path), { recursive: true });
        const tmp = join(dirname(path), tempName());
        try {
          await writeFileSynced(tmp, bytes);
          await rename(tmp, path);
        } catch (err) {
          await rm(tmp, { force: true });
          throw err;
        }
        return { stored: await this.readManifestAt(target), replaced };
      }),
    );
  }

  /**
   * Removes a manifest file, then every manifest directory left empty up to (not including) manifests/ (§3.12).
   * Blobs are untouched (see pruneLayers). Runs under the store lock.
   * @throws InternalError `cannot remove manifest: <errno text>`.
   */
  async removeManifest(stored: StoredManifest): Promise<void> {
    await this.exclusive(() =>
      this.io('cannot remove manifest', async () => {
        await rm(stored.path, { force: true });
        let dir = dirname(stored.path);
        while (dir.startsWith(this.manifestsDir + sep) && dir !== this.manifestsDir) {
          try {
            await rmdir(dir);
          } catch {
            break; // not empty (or gone): stop
          }
          dir = dirname(dir);
        }
      }),
    );
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
      this.io('cannot prune blobs', async () => {
        const { used, complete } = await this.referencedDigests();
        if (!complete) return [];
        const removed: string[] = [];
        for (const digest of new Set(digests)) {
          if (used.has(digest) || !isDigest(digest)) continue;
          if (this.pins.has(digest)) {
            this.deferred.add(digest);
            continue;
          }
          await rm(this.blobPath(digest), { force: true });
          removed.push(digest);
        }
        return removed;
      }),
    );
  }

  /** Every digest referenced by a manifest; `complete` is false when some manifest file could not be read. */
  private async referencedDigests(): Promise<{ used: Set<string>; complete: boolean }> {
    const { manifests, unreadable } = await this.scanManifests();
    const used = new Set<string>();
    for (const m of manifests) for (const d of manifestDigestsOf(m.manifest)) used.add(d);
    return { used, complete: unreadable === 0 };
  }

  /** Runs a file-system operation, turning its failures into path-free errors (store-errors.ts). */
  private async io<T>(action: string, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      throw storeError(err, action);
    }
  }

  /**
   * Walks manifests/: valid manifests, and how many files with a valid name (or directories) could not be read.
   */
  private async scanManifests(): Promise<{ manifests: StoredManifest[]; unreadable: number }> {
    const out: StoredManifest[] = [];
    let unreadable = 0;
    const walk = async (dir: string, parts: string[]): Promise<void> => {
      let entries: import('node:fs').Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        // No manifests/ yet is an empty store; an unreadable directory may hide manifests.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') unreadable++;
        return;
      }
      for (const entry of entries) {
        const next = [...parts, entry.name];
        if (parts.length < 3 && entry.isDirectory()) {
          await walk(join(dir, entry.name), next);
        } else if (parts.length === 3 && entry.isFile()) {
          const name = ModelName.fromParts(next[0], next[1], next[2], next[3]);
          if (!name) continue;
          try {
            out.push(await this.readManifestAt(name));
          } catch {
            // A broken or foreign file in the manifest tree is not a model; skip it.
            unreadable++;
          }
        }
      }
    };
    await walk(this.manifestsDir, []);
    return { manifests: out, unreadable };
  }
}

/** A valid blob file name in blobs/. */
const BLOB_FILE_NAME = /^sha256-[0-9a-f]{64}$/;

/** Digests of a manifest's config and layers (`sha256:<hex>`), in order. */
export function manifestDigestsOf(manifest: Manifest): string[] {
  return [manifest.config.digest, ...manifest.layers.map((l) => l.digest)];
}

/** Writes a file and fsyncs it, so a rename after a crash never exposes a truncated file. */
async function writeFileSynced(path: string, data: Buffer): Promise<void> {
  const handle = await open(path, 'w', 0o644);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** fsyncs a written file so that a rename after a crash never exposes a truncated blob. */
async function fsyncFile(path: string): Promise<void> {
  const handle = await open(path, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Streams `source` into a new file at `path` while hashing; fsyncs it. @returns `sha256:<hex>` and bytes. */
async function hashCopy(source: Readable, path: string): Promise<StoredBlob> {
  const hash = createHash('sha256');
  let size = 0;
  const hasher = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      size += chunk.length;
      cb(null, chunk);
    },
  });
  await pipeline(source, hasher, createWriteStream(path, { mode: 0o644 }));
  await fsyncFile(path);
  return { digest: `sha256:${hash.digest('hex')}`, size };
}
