import { Injectable } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readFile, readdir, rename, rm, rmdir, stat, utimes } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DigestMismatchError, InternalError } from '../common/errors';
import { DaemonConfig } from '../config';
import { goJsonEncode, isDigest, Manifest } from './manifest';
import { ModelName } from './model-name';

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

/** Temporary files start with a dot: never a valid tag or digest name, so listings and Ollama's prune skip them. */
function tempName(): string {
  return `.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
}

/**
 * The model store on disk in Ollama's own layout (reference/ollama-api.md §10.1):
 * `<root>/blobs/sha256-<hex>` (content-addressed, mode 0644) and `<root>/manifests/<host>/<namespace>/<model>/<tag>`.
 * Every write is atomic: content goes to a temporary file in the destination directory, then is renamed.
 * The only class that touches these files (ARCHITECTURE.md §4 repository layer).
 */
@Injectable()
export class ModelStoreRepository {
  constructor(private readonly config: DaemonConfig) {}

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

  /** Reads a whole blob (templates, params, config: small layers). */
  async readBlob(digest: string): Promise<Buffer> {
    return readFile(this.blobPath(digest));
  }

  /** Moves a finished temporary file to its blob path, or drops it and touches the existing blob (§10.1). */
  private async commitBlob(tmp: string, digest: string): Promise<void> {
    const target = this.blobPath(digest);
    try {
      await stat(target);
      await rm(tmp, { force: true });
      const now = new Date();
      await utimes(target, now, now);
    } catch {
      await rename(tmp, target);
    }
  }

  /**
   * Copies a file into the blob store, hashing while streaming to a temporary file in blobs/, then renaming
   * (§10.1). Reading never loads the whole file in memory.
   * @returns its digest and size in bytes.
   */
  async importFile(sourcePath: string): Promise<StoredBlob> {
    await mkdir(this.blobsDir, { recursive: true });
    const tmp = join(this.blobsDir, tempName());
    try {
      const { digest, size } = await hashCopy(createReadStream(sourcePath), tmp);
      await this.commitBlob(tmp, digest);
      return { digest, size };
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  /**
   * Streams an uploaded body into the store (POST /api/blobs/:digest, §3.10): written to a temporary file in blobs/
   * while hashed, fsynced, compared with `expected`, then renamed. Nothing is buffered in memory.
   * @param expected `sha256:<hex>` (lower-case hex).
   * @returns the blob and whether it was new (false when an identical blob already existed).
   * @throws DigestMismatchError (400) `digest mismatch, expected "sha256:…", got "sha256:…"` (the temporary file is
   *   removed); stream/disk errors as they are (the temporary file is removed).
   */
  async receiveBlob(body: Readable, expected: string): Promise<StoredBlob & { created: boolean }> {
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
  }

  /**
   * A fresh temporary path inside blobs/ (created if needed) for producers that write a file themselves (the
   * quantizer); hand it to adoptTempFile() when complete, or remove it.
   */
  async newTempBlobPath(): Promise<string> {
    await mkdir(this.blobsDir, { recursive: true });
    return this.tempBlobPath();
  }

  private tempBlobPath(): string {
    return join(this.blobsDir, tempName());
  }

  /**
   * Turns a complete temporary file from newTempBlobPath() into a blob: hashes it (streamed), fsyncs, renames.
   * The temporary file is gone afterwards, whatever happens.
   */
  async adoptTempFile(tmp: string): Promise<StoredBlob> {
    try {
      const hash = createHash('sha256');
      let size = 0;
      for await (const chunk of createReadStream(tmp)) {
        hash.update(chunk as Buffer);
        size += (chunk as Buffer).length;
      }
      await fsyncFile(tmp);
      const digest = `sha256:${hash.digest('hex')}`;
      await this.commitBlob(tmp, digest);
      return { digest, size };
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  /**
   * Startup hygiene (Ollama's Serve, reference §7.7): deletes files in blobs/ whose name is not a blob name
   * (`sha256-<64 hex>`) — interrupted uploads, imports, quantizations, downloads — when older than `maxAgeMs`.
   * Valid blobs are never touched here, referenced or not.
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
      if (/^sha256-[0-9a-f]{64}$/.test(entry)) continue;
      const path = join(this.blobsDir, entry);
      const info = await stat(path).catch(() => null);
      if (!info?.isFile() || now - info.mtimeMs < maxAgeMs) continue;
      await rm(path, { force: true });
      removed.push(entry);
    }
    return removed;
  }

  /** Writes bytes as a blob (template, system, params, messages, license, config layers). */
  async writeBlob(data: string | Buffer): Promise<StoredBlob> {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    await mkdir(this.blobsDir, { recursive: true });
    const tmp = join(this.blobsDir, tempName());
    try {
      await writeFileSynced(tmp, bytes);
      await this.commitBlob(tmp, digest);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    return { digest, size: bytes.length };
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
   * @throws InternalError when the file exists but is not a manifest.
   */
  async readManifest(name: ModelName): Promise<StoredManifest | null> {
    const existing = await this.findExisting(name);
    if (!existing) return null;
    return this.readManifestAt(existing);
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
   * An existing manifest whose name differs only in case is replaced in place.
   */
  async writeManifest(name: ModelName, manifest: Manifest): Promise<StoredManifest> {
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
  }

  /** Every valid manifest in the store (files whose four path parts form a valid name); unreadable ones skipped. */
  async listManifests(): Promise<StoredManifest[]> {
    return (await this.scanManifests()).manifests;
  }

  /**
   * Copies a manifest file byte for byte (Ollama's CopyModel, §3.11): blobs are shared, so the copy has the same
   * digest. The destination is written atomically; an existing destination (matched case-insensitively) is replaced.
   * @returns the destination as stored, and the manifest it replaced (if any).
   */
  async copyManifest(
    source: StoredManifest,
    destination: ModelName,
  ): Promise<{ stored: StoredManifest; replaced: StoredManifest | null }> {
    const existing = await this.findExisting(destination);
    const replaced = existing ? await this.readManifestAt(existing).catch(() => null) : null;
    const target = existing ?? destination;
    const path = this.manifestPath(target);
    await mkdir(dirname(path), { recursive: true });
    const tmp = join(dirname(path), tempName());
    try {
      await writeFileSynced(tmp, await readFile(source.path));
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    return { stored: await this.readManifestAt(target), replaced };
  }

  /**
   * Removes a manifest file, then every manifest directory left empty up to (not including) manifests/ (§3.12).
   * Blobs are untouched (see pruneLayers).
   */
  async removeManifest(stored: StoredManifest): Promise<void> {
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
  }

  /**
   * Deletes the given blobs that no manifest in the store references any more (Ollama's RemoveLayers /
   * deleteUnusedLayers). Does nothing at all when some manifest file cannot be read: it might reference them.
   * @returns the digests deleted.
   */
  async pruneLayers(digests: string[]): Promise<string[]> {
    const { manifests, unreadable } = await this.scanManifests();
    if (unreadable > 0) return [];
    const used = new Set<string>();
    for (const m of manifests) {
      used.add(m.manifest.config.digest);
      for (const l of m.manifest.layers) used.add(l.digest);
    }
    const removed: string[] = [];
    for (const digest of new Set(digests)) {
      if (used.has(digest) || !isDigest(digest)) continue;
      await rm(this.blobPath(digest), { force: true });
      removed.push(digest);
    }
    return removed;
  }

  /** Walks manifests/: valid manifests, and how many files with a valid name could not be read as one. */
  private async scanManifests(): Promise<{ manifests: StoredManifest[]; unreadable: number }> {
    const out: StoredManifest[] = [];
    let unreadable = 0;
    const walk = async (dir: string, parts: string[]): Promise<void> => {
      let entries: import('node:fs').Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch {
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
