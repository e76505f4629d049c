import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DaemonError, ErrorCode } from '../common/errors';
import { ModelName, ModelStore } from '../models';

/** A downloaded blob that does not hash to its digest (§6.3). Ollama: 400 (DIGEST_MISMATCH). */
export class BlobDigestMismatchError extends DaemonError {
  readonly code = ErrorCode.DIGEST_MISMATCH;
  constructor(
    readonly want: string,
    readonly got: string,
  ) {
    super(`digest mismatch, file must be downloaded again: want ${want}, got ${got}`);
  }
}

/**
 * The registry's file operations on top of the model store (reference/ollama-api.md §10.1):
 * - partial downloads live in `<OLLAMA_MODELS>/partial/` — beside the store, never inside `blobs/` or `manifests/`,
 *   so a crash at any point leaves `blobs/` holding only verified content;
 * - a verified partial is renamed into `blobs/` (same file system: atomic);
 * - a pulled manifest is written byte for byte as received, to a temporary file beside its target, fsynced, then
 *   renamed (so its digest is the registry's).
 * Paths come from the MODEL_STORE (blobPath, findExisting); the layout is Ollama's.
 */
export class RegistryFiles {
  constructor(private readonly store: ModelStore) {}

  /** `<OLLAMA_MODELS>/partial`. */
  get partialDir(): string {
    return join(this.store.root, 'partial');
  }

  /** Partial file of part `index` of a blob: `partial/sha256-<hex>-partial-<index>`. */
  partPath(digest: string, index: number): string {
    return join(this.partialDir, `${digest.replace(':', '-')}-partial-${index}`);
  }

  /** The file the parts of a multi-part blob are joined into before verification. */
  joinedPath(digest: string): string {
    return join(this.partialDir, `${digest.replace(':', '-')}-partial`);
  }

  async ensurePartialDir(): Promise<void> {
    await mkdir(this.partialDir, { recursive: true });
  }

  /** Moves a verified file into `blobs/` under its digest (atomic rename). */
  async commitBlob(path: string, digest: string): Promise<void> {
    const target = this.store.blobPath(digest);
    await mkdir(dirname(target), { recursive: true });
    const handle = await open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(path, target);
  }

  /** Absolute path of a stored blob. */
  blobPath(digest: string): string {
    return this.store.blobPath(digest);
  }

  /**
   * Writes manifest bytes exactly as given for a name, atomically (temporary file in the same directory, fsync,
   * rename). An existing manifest whose name differs only in case is replaced in place.
   */
  async writeManifestBytes(name: ModelName, bytes: Buffer): Promise<void> {
    const target = (await this.store.findExisting(name)) ?? name;
    const path = join(this.store.root, 'manifests', ...target.manifestSegments());
    await mkdir(dirname(path), { recursive: true });
    const tmp = join(dirname(path), `.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
    try {
      const handle = await open(tmp, 'w', 0o644);
      try {
        await handle.writeFile(bytes);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  /** Streams a file (or a byte range `[start, end)` of it) — used for uploads. */
  readRange(path: string, start: number, end: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      if (end <= start) return resolve(Buffer.alloc(0));
      const chunks: Buffer[] = [];
      createReadStream(path, { start, end: end - 1 })
        .on('data', (c) => chunks.push(c as Buffer))
        .on('error', reject)
        .on('end', () => resolve(Buffer.concat(chunks)));
    });
  }
}
