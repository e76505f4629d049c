import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { RegistryError } from '../common/errors';
import { RegistryFiles, BlobDigestMismatchError } from './registry-files';
import { unexpectedStatus, RegistrySession } from './registry-http.client';
import { isNetworkFailure, registryNetworkError } from './registry-errors';

/** Transfer tuning; sizes in bytes. Defaults follow Ollama's rules (§6.3, §6.5) in binary units. */
export interface TransferTuning {
  /** Blobs larger than this are downloaded in parts of at least this size (Ollama: 100 MB–1000 MB, 16 parts). */
  partSize: number;
  /** Parts downloaded at the same time. */
  maxParallelParts: number;
  /** Blobs larger than this are uploaded with chunked PATCH requests of this size; smaller ones in one PUT. */
  uploadChunkSize: number;
  /** Attempts per part after a network error (the first included). */
  attempts: number;
  /** First retry delay in ms (doubles each time). */
  retryDelayMs: number;
}

export const DEFAULT_TUNING: TransferTuning = {
  partSize: 100 * 1024 * 1024,
  maxParallelParts: 16,
  uploadChunkSize: 64 * 1024 * 1024,
  attempts: 4,
  retryDelayMs: 250,
};

/** One byte range `[start, end)` of a blob. */
export interface BlobPart {
  index: number;
  start: number;
  end: number;
}

/**
 * Splits a blob into download parts (§6.3): one part up to `partSize`; above it parts of
 * `max(partSize, ceil(size / 16))` bytes, the last one shorter. A 0-byte blob is one empty part.
 */
export function planParts(size: number, partSize: number): BlobPart[] {
  if (size <= partSize) return [{ index: 0, start: 0, end: size }];
  const each = Math.max(partSize, Math.ceil(size / 16));
  const parts: BlobPart[] = [];
  for (let start = 0, index = 0; start < size; start += each, index++) {
    parts.push({ index, start, end: Math.min(size, start + each) });
  }
  return parts;
}

/** What downloadBlob needs to know about one blob. */
export interface BlobDownload {
  session: RegistrySession;
  /** Blob URL (`/v2/<ns>/<model>/blobs/<digest>`). */
  url: string;
  /** `sha256:<hex>`. */
  digest: string;
  /** Bytes, from the manifest. */
  size: number;
  signal: AbortSignal;
  /** Called with the total bytes present (resumed + downloaded) after every chunk. */
  onProgress: (completed: number) => void;
}

async function fileSize(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

/**
 * Ollama's `max retries exceeded: <cause>` (download.go, reference/ollama-api.md §5.2) for a part whose registry or
 * network failure lasted through every attempt; the registry status of the last failure, if any, is kept.
 */
function maxRetriesExceeded(err: RegistryError): RegistryError {
  return new RegistryError(`max retries exceeded: ${err.message}`, err.upstreamStatus, { cause: err });
}

function isRetryable(err: unknown, signal: AbortSignal): boolean {
  if (signal.aborted) return false;
  if (err instanceof RegistryError) return err.upstreamStatus === undefined || err.upstreamStatus >= 500;
  const code = (err as NodeJS.ErrnoException)?.code;
  return code !== 'ENOSPC';
}

/**
 * Downloads one blob into the store (reference/ollama-api.md §6.3), crash-safe and resumable:
 * 1. each part streams into `partial/sha256-<hex>-partial-<n>`; a part file that already holds bytes (from an
 *    interrupted pull, even before a daemon restart) is resumed with `Range: bytes=<start+have>-<end-1>`; parts run
 *    in parallel (at most `maxParallelParts`); network errors retry with exponential backoff;
 * 2. parts are joined (multi-part blobs only) and the result is hashed;
 * 3. a sha256 mismatch deletes the partial files and throws `digest mismatch, file must be downloaded again: want
 *    sha256:…, got sha256:…`; a match renames the file into `blobs/` — the only moment the store changes.
 * @throws BlobDigestMismatchError; RegistryError `pull layer <short id>: 404 …`-style for registry statuses
 *   (unexpectedStatus; `file does not exist` for 404) and `pull layer <short id>: Get "<url>": <why>` for network
 *   failures (registryNetworkError), wrapped as `max retries exceeded: <last error>` once the retryable ones (network,
 *   5xx) used every attempt (tuning.attempts); the abort error when aborted; file-system errors as thrown.
 */
export async function downloadBlob(files: RegistryFiles, d: BlobDownload, tuning: TransferTuning): Promise<void> {
  await files.ensurePartialDir();
  const parts = planParts(d.size, tuning.partSize);
  const partsController = new AbortController();
  const onAbort = () => partsController.abort();
  if (d.signal.aborted) partsController.abort();
  else d.signal.addEventListener('abort', onAbort);
  const signal = partsController.signal;
  const have = await Promise.all(parts.map((p) => fileSize(files.partPath(d.digest, p.index))));
  const report = () => d.onProgress(have.reduce((a, b) => a + Math.min(b, d.size), 0));
  report();

  const runPart = async (part: BlobPart): Promise<void> => {
    const path = files.partPath(d.digest, part.index);
    const length = part.end - part.start;
    for (let attempt = 1; ; attempt++) {
      try {
        have[part.index] = await fileSize(path);
        if (have[part.index] > length) {
          await rm(path, { force: true });
          have[part.index] = 0;
        }
        if (length === 0) return void (await writeFile(path, Buffer.alloc(0)));
        if (have[part.index] === length) return;
        await fetchPart(part, path);
        return;
      } catch (err) {
        if (!isRetryable(err, signal)) throw err;
        if (attempt >= tuning.attempts) throw err instanceof RegistryError ? maxRetriesExceeded(err) : err;
        await new Promise((r) => setTimeout(r, tuning.retryDelayMs * 2 ** (attempt - 1)));
      }
    }
  };

  const fetchPart = async (part: BlobPart, path: string): Promise<void> => {
    const length = part.end - part.start;
    const offset = have[part.index];
    const ranged = offset > 0 || parts.length > 1;
    const headers: Record<string, string> = {};
    if (ranged) headers.range = `bytes=${part.start + offset}-${part.end - 1}`;
    const res = await d.session.fetch({ method: 'GET', url: d.url, headers, signal });
    let append: boolean;
    if (res.status === 206) {
      append = true;
    } else if (res.status === 200 && parts.length === 1) {
      append = false; // the server ignored Range: start over
      have[part.index] = 0;
    } else if (res.status === 404) {
      await res.body?.cancel().catch(() => undefined);
      throw new RegistryError('file does not exist', 404);
    } else {
      throw await unexpectedStatus(res);
    }
    if (!res.body) throw new RegistryError(`${res.status}: empty body`, res.status);
    let written = have[part.index];
    const counter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        written += chunk.length;
        if (written > length) return cb(new RegistryError('registry sent more bytes than the blob size'));
        have[part.index] = written;
        report();
        cb(null, chunk);
      },
    });
    try {
      await pipeline(
        Readable.fromWeb(res.body as unknown as WebReadableStream<Uint8Array>),
        counter,
        createWriteStream(path, { flags: append ? 'a' : 'w', mode: 0o644 }),
      );
    } catch (err) {
      // A body cut mid-way is a network failure of this GET (retried); disk errors pass unchanged.
      throw isNetworkFailure(err) ? registryNetworkError(err, { method: 'GET', url: d.url }) : err;
    }
    if (written !== length) throw new RegistryError(`unexpected end of blob ${d.digest}`);
  };

  // Bounded parallelism over the parts. The first failure stops the others; every worker has settled (no file is
  // still being written) before the error propagates, so a retry never races a stale writer.
  let next = 0;
  let failure: { err: unknown } | undefined;
  const workers = Array.from({ length: Math.min(tuning.maxParallelParts, parts.length) }, async () => {
    while (next < parts.length && !failure) {
      try {
        await runPart(parts[next++]);
      } catch (err) {
        failure ??= { err };
        partsController.abort();
      }
    }
  });
  await Promise.all(workers);
  d.signal.removeEventListener('abort', onAbort);
  if (failure) throw failure.err;

  // Join (multi-part only) while hashing, then verify before the blob enters the store.
  const hash = createHash('sha256');
  let finalPath: string;
  if (parts.length === 1) {
    finalPath = files.partPath(d.digest, 0);
    for await (const chunk of createReadStream(finalPath)) hash.update(chunk as Buffer);
  } else {
    finalPath = files.joinedPath(d.digest);
    const out = createWriteStream(finalPath, { mode: 0o644 });
    try {
      for (const part of parts) {
        for await (const chunk of createReadStream(files.partPath(d.digest, part.index))) {
          hash.update(chunk as Buffer);
          if (!out.write(chunk)) await once(out, 'drain');
        }
      }
    } finally {
      await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    }
  }
  const got = `sha256:${hash.digest('hex')}`;
  const removeParts = () => Promise.all(parts.map((p) => rm(files.partPath(d.digest, p.index), { force: true })));
  if (got !== d.digest) {
    await removeParts();
    await rm(files.joinedPath(d.digest), { force: true });
    throw new BlobDigestMismatchError(d.digest, got);
  }
  await files.commitBlob(finalPath, d.digest);
  if (parts.length > 1) await removeParts();
}
