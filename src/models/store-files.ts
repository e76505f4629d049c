import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { StoredBlob } from './model-store';
import { storeError } from './store-errors';

/** File helpers of the on-disk model store (ModelStoreRepository and its parts): atomic, fsynced, path-free errors. */

/** A valid blob file name in blobs/. */
export const BLOB_FILE_NAME = /^sha256-[0-9a-f]{64}$/;

/** Temporary files start with a dot: never a valid tag or digest name, so listings and Ollama's prune skip them. */
export function tempName(): string {
  return `.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
}

/** Runs a file-system operation, turning its failures into path-free errors (store-errors.ts). */
export async function storeIo<T>(action: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    throw storeError(err, action);
  }
}

/** Writes a file and fsyncs it, so a rename after a crash never exposes a truncated file. */
export async function writeFileSynced(path: string, data: Buffer): Promise<void> {
  const handle = await open(path, 'w', 0o644);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** fsyncs a written file so that a rename after a crash never exposes a truncated blob. */
export async function fsyncFile(path: string): Promise<void> {
  const handle = await open(path, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Streams `source` into a new file at `path` while hashing; fsyncs it. @returns `sha256:<hex>` and bytes. */
export async function hashCopy(source: Readable, path: string): Promise<StoredBlob> {
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
