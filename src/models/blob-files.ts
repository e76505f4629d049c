import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { DigestMismatchError, InternalError } from '../common/errors';
import { isDigest } from './manifest';
import type { BlobPin, StoredBlob } from './model-store';
import { storeError } from './store-errors';
import { BLOB_FILE_NAME, fsyncFile, hashCopy, storeIo, tempName, writeFileSynced } from './store-files';

/**
 * The blobs/ half of the on-disk store (reference/ollama-api.md §10.1): `<root>/blobs/sha256-<hex>`,
 * content-addressed, mode 0644. Every write goes to a temporary file in blobs/ (hashed while written, fsynced), then
 * is renamed. Knows nothing of manifests, the lock or pins: ModelStoreRepository composes those.
 */
export class BlobFiles {
  /** @param root the store root (read on each call: tests change the configured directory). */
  constructor(private readonly root: () => string) {}

  /** `<root>/blobs`. */
  get dir(): string {
    return join(this.root(), 'blobs');
  }

  /**
   * Absolute path of a blob (`sha256:<hex>` → `<root>/blobs/sha256-<hex>`).
   * @throws InternalError for a malformed digest (digests come from manifests, never straight from users).
   */
  path(digest: string): string {
    if (!isDigest(digest)) throw new InternalError(`invalid digest format: ${digest}`);
    return join(this.dir, digest.replace(':', '-'));
  }

  /** Size in bytes of a blob, or null when it is missing. */
  async size(digest: string): Promise<number | null> {
    try {
      const s = await stat(this.path(digest));
      return s.isFile() ? s.size : null;
    } catch {
      return null;
    }
  }

  /**
   * Reads a whole blob (templates, params, config: small layers).
   * @throws InternalError `cannot read blob sha256:…: <errno text>`.
   */
  async read(digest: string): Promise<Buffer> {
    return readFile(this.path(digest)).catch((err: unknown) => {
      throw storeError(err, `cannot read blob ${digest}`);
    });
  }

  /**
   * Moves a finished temporary file to its blob path (§10.1). An existing blob with that name has the same bytes;
   * replacing it by rename (atomic) rather than keeping it means the blob is there, with a fresh mtime, the moment
   * this returns, even if a prune removed the old file meanwhile. `pin` (if any) gets the digest first.
   */
  private async commit(tmp: string, digest: string, pin?: BlobPin): Promise<void> {
    pin?.add(digest);
    await rename(tmp, this.path(digest));
  }

  /**
   * Copies a file into the blob store, hashing while streaming to a temporary file in blobs/, then renaming
   * (§10.1). Reading never loads the whole file in memory.
   * @param pin pinned with the digest before the blob appears (in-flight creates).
   * @returns its digest and size in bytes.
   * @throws InternalError `cannot import file: <errno text>` (the source's path is not repeated).
   */
  async importFile(sourcePath: string, pin?: BlobPin): Promise<StoredBlob> {
    return storeIo('cannot import file', async () => {
      await mkdir(this.dir, { recursive: true });
      const tmp = this.tempPath();
      try {
        const { digest, size } = await hashCopy(createReadStream(sourcePath), tmp);
        await this.commit(tmp, digest, pin);
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
  async receive(body: Readable, expected: string): Promise<StoredBlob & { created: boolean }> {
    return storeIo('cannot store blob', async () => {
      await mkdir(this.dir, { recursive: true });
      const tmp = this.tempPath();
      try {
        const { digest, size } = await hashCopy(body, tmp);
        if (digest !== expected) {
          throw new DigestMismatchError(expected, digest);
        }
        const existed = (await this.size(digest)) !== null;
        await this.commit(tmp, digest);
        return { digest, size, created: !existed };
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
    });
  }

  /**
   * A fresh temporary path inside blobs/ (created if needed) for producers that write a file themselves (the
   * quantizer); hand it to adopt() when complete, or remove it.
   */
  async newTempPath(): Promise<string> {
    await storeIo('cannot create blobs directory', () => mkdir(this.dir, { recursive: true }));
    return this.tempPath();
  }

  private tempPath(): string {
    return join(this.dir, tempName());
  }

  /**
   * Turns a complete temporary file from newTempPath() into a blob: hashes it (streamed), fsyncs, renames.
   * The temporary file is gone afterwards, whatever happens.
   * @param pin pinned with the digest before the blob appears.
   * @throws InternalError `cannot store blob: <errno text>`.
   */
  async adopt(tmp: string, pin?: BlobPin): Promise<StoredBlob> {
    return storeIo('cannot store blob', async () => {
      try {
        const hash = createHash('sha256');
        let size = 0;
        for await (const chunk of createReadStream(tmp)) {
          hash.update(chunk as Buffer);
          size += (chunk as Buffer).length;
        }
        await fsyncFile(tmp);
        const digest = `sha256:${hash.digest('hex')}`;
        await this.commit(tmp, digest, pin);
        return { digest, size };
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
    });
  }

  /**
   * Writes bytes as a blob (template, system, params, messages, license, config layers).
   * @param pin pinned with the digest before the blob appears.
   * @throws InternalError `cannot write blob: <errno text>`.
   */
  async write(data: string | Buffer, pin?: BlobPin): Promise<StoredBlob> {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    return storeIo('cannot write blob', async () => {
      await mkdir(this.dir, { recursive: true });
      const tmp = this.tempPath();
      try {
        await writeFileSynced(tmp, bytes);
        await this.commit(tmp, digest, pin);
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
      return { digest, size: bytes.length };
    });
  }

  /**
   * Startup hygiene (Ollama's Serve, reference §7.7): deletes files in blobs/ whose name is not a blob name
   * (`sha256-<64 hex>`) — interrupted uploads, imports, quantizations, downloads — when older than `maxAgeMs`.
   * Valid blobs are never touched here, referenced or not (see ModelStoreRepository.sweepOrphans).
   * @returns the file names removed.
   */
  async removeStaleTempFiles(maxAgeMs: number, now = Date.now()): Promise<string[]> {
    let entries: string[];
    try {
      entries = await readdir(this.dir);
    } catch {
      return [];
    }
    const removed: string[] = [];
    for (const entry of entries) {
      if (BLOB_FILE_NAME.test(entry)) continue;
      const path = join(this.dir, entry);
      const info = await stat(path).catch(() => null);
      if (!info?.isFile() || now - info.mtimeMs < maxAgeMs) continue;
      await rm(path, { force: true });
      removed.push(entry);
    }
    return removed;
  }

  /** Whether blobs/ exists (an empty store has none). */
  async exists(): Promise<boolean> {
    return stat(this.dir).then(
      () => true,
      () => false,
    );
  }

  /** Deletes a blob file (a missing one is no error). */
  async remove(digest: string): Promise<void> {
    await rm(this.path(digest), { force: true });
  }

  /** The file names in blobs/ (blobs and temporary files). */
  list(): Promise<string[]> {
    return readdir(this.dir);
  }

  /**
   * Deletes the blob files among `entries` (names from list()) that `keep` does not protect and whose mtime is at
   * least `minAgeMs` old.
   * @returns how many files and bytes were removed.
   */
  async removeUnkept(
    entries: string[],
    keep: (digest: string) => boolean,
    minAgeMs: number,
    now: number,
  ): Promise<{ count: number; bytes: number }> {
    const result = { count: 0, bytes: 0 };
    for (const entry of entries) {
      if (!BLOB_FILE_NAME.test(entry)) continue;
      if (keep(entry.replace('-', ':'))) continue;
      const path = join(this.dir, entry);
      const info = await stat(path).catch(() => null);
      if (!info?.isFile() || now - info.mtimeMs < minAgeMs) continue;
      await rm(path, { force: true });
      result.count++;
      result.bytes += info.size;
    }
    return result;
  }
}
