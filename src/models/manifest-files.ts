import { createHash } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, rmdir, stat } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { InternalError } from '../common/errors';
import { goJsonEncode, Manifest } from './manifest';
import { ModelName } from './model-name';
import type { CopiedManifest, StoredManifest } from './model-store';
import { storeIo, tempName, writeFileSynced } from './store-files';

/**
 * The manifests/ half of the on-disk store (reference/ollama-api.md §10.1):
 * `<root>/manifests/<host>/<namespace>/<model>/<tag>`, names matched case-insensitively like Ollama's
 * getExistingName (§10.4). Writes are atomic (temporary file in the destination directory + rename). Takes no lock:
 * ModelStoreRepository runs the writes under its own.
 */
export class ManifestFiles {
  /** @param root the store root (read on each call). */
  constructor(private readonly root: () => string) {}

  /** `<root>/manifests`. */
  get dir(): string {
    return join(this.root(), 'manifests');
  }

  /**
   * Finds the on-disk spelling of a name: each path component is matched case-insensitively against the existing
   * manifest tree (an exact match wins), like Ollama's getExistingName (§10.4).
   * @returns the existing name, or null when no manifest matches.
   */
  async findExisting(name: ModelName): Promise<ModelName | null> {
    let dir = this.dir;
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

  private path(name: ModelName): string {
    return join(this.dir, ...name.manifestSegments());
  }

  /**
   * Reads the manifest of a name (matched case-insensitively).
   * @returns null when there is none.
   * @throws InternalError when the file exists but is not a manifest or cannot be read.
   */
  async read(name: ModelName): Promise<StoredManifest | null> {
    const existing = await this.findExisting(name);
    if (!existing) return null;
    return storeIo(`cannot read manifest of ${existing.toShortString()}`, () => this.readAt(existing));
  }

  /** Reads the manifest file of an existing (on-disk spelled) name; failures are raw (callers wrap them). */
  async readAt(name: ModelName): Promise<StoredManifest> {
    const path = this.path(name);
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

  /** Writes `bytes` atomically as the manifest file of `target` (temporary file + fsync + rename). */
  private async writeAt(target: ModelName, bytes: Buffer): Promise<void> {
    const path = this.path(target);
    await mkdir(dirname(path), { recursive: true });
    const tmp = join(dirname(path), tempName());
    try {
      await writeFileSynced(tmp, bytes);
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  /**
   * Writes a manifest atomically as Go's encoder would (compact JSON, trailing newline). An existing manifest whose
   * name differs only in case is replaced in place. Call under the store lock.
   * @throws InternalError `cannot write manifest of <name>: <errno text>`.
   */
  async write(name: ModelName, manifest: Manifest): Promise<StoredManifest> {
    return storeIo(`cannot write manifest of ${name.toShortString()}`, async () => {
      const target = (await this.findExisting(name)) ?? name;
      await this.writeAt(target, Buffer.from(goJsonEncode(manifest), 'utf8'));
      return this.readAt(target);
    });
  }

  /**
   * Copies a manifest file byte for byte (Ollama's CopyModel, §3.11); an existing destination (matched
   * case-insensitively) is replaced. Call under the store lock.
   * @returns null when the source file is gone.
   * @throws InternalError `cannot copy manifest: <errno text>`.
   */
  async copy(source: StoredManifest, destination: ModelName): Promise<CopiedManifest | null> {
    return storeIo('cannot copy manifest', async () => {
      const bytes = await readFile(source.path).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return null;
        throw err;
      });
      if (bytes === null) return null;
      const existing = await this.findExisting(destination);
      const replaced = existing ? await this.readAt(existing).catch(() => null) : null;
      const target = existing ?? destination;
      await this.writeAt(target, bytes);
      return { stored: await this.readAt(target), replaced };
    });
  }

  /**
   * Removes a manifest file, then every manifest directory left empty up to (not including) manifests/ (§3.12).
   * Call under the store lock.
   * @throws InternalError `cannot remove manifest: <errno text>`.
   */
  async remove(stored: StoredManifest): Promise<void> {
    await storeIo('cannot remove manifest', async () => {
      await rm(stored.path, { force: true });
      let dir = dirname(stored.path);
      while (dir.startsWith(this.dir + sep) && dir !== this.dir) {
        try {
          await rmdir(dir);
        } catch {
          break; // not empty (or gone): stop
        }
        dir = dirname(dir);
      }
    });
  }

  /**
   * Walks manifests/: valid manifests, and how many files with a valid name (or directories) could not be read.
   */
  async scan(): Promise<{ manifests: StoredManifest[]; unreadable: number }> {
    const out: StoredManifest[] = [];
    let unreadable = 0;
    const walk = async (dir: string, parts: string[]): Promise<void> => {
      let entries: Dirent[];
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
            out.push(await this.readAt(name));
          } catch {
            // A broken or foreign file in the manifest tree is not a model; skip it.
            unreadable++;
          }
        }
      }
    };
    await walk(this.dir, []);
    return { manifests: out, unreadable };
  }
}
