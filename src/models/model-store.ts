import type { Readable } from 'node:stream';
import { InternalError } from '../common/errors';
import type { Manifest } from './manifest';
import type { ModelName } from './model-name';

/** A blob written to or found in the store. */
export interface StoredBlob {
  /** `sha256:<hex>`. */
  digest: string;
  /** Bytes. */
  size: number;
}

/** A manifest read from the store. */
export interface StoredManifest {
  /** The name with the case used in the store. */
  name: ModelName;
  manifest: Manifest;
  /** Hex sha256 of the manifest file's bytes: the model "digest" of /api/tags (§1.4). */
  digest: string;
  /** When the manifest was last written (the file's mtime). */
  modifiedAt: Date;
  /** Where the manifest lives (an absolute file path in the default store). */
  path: string;
}

/**
 * Digests an in-flight create or pull will reference (ModelStore.pin): the prune leaves them alone until released,
 * so a concurrent delete cannot remove a blob between the moment a new manifest's layers are chosen and the moment
 * the manifest is written.
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
  /** True when the sweep did not run because some manifest could not be read (it might reference blobs). */
  skipped: boolean;
}

/** What commitManifest wrote and removed. */
export interface CommittedManifest {
  /** The new manifest as stored. */
  stored: StoredManifest;
  /** The manifest it replaced (same name, matched case-insensitively), if any. */
  replaced: StoredManifest | null;
  /** Digests of the replaced manifest's layers that nothing references any more, deleted. */
  pruned: string[];
}

/** What copyManifest wrote. */
export interface CopiedManifest {
  /** The destination as stored (same digest as the source: the bytes are copied). */
  stored: StoredManifest;
  /** The destination manifest it replaced, if any. */
  replaced: StoredManifest | null;
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

/**
 * DI token of the model store (ARCHITECTURE.md §13): manifests by name and content-addressed blobs. The default
 * implementation is ModelStoreRepository (Ollama's on-disk layout under OLLAMA_MODELS, reference/ollama-api.md
 * §10.1); a host application may provide its own.
 */
export const MODEL_STORE = Symbol('MODEL_STORE');

/**
 * The model store as its consumers (models, registry) use it: manifests by name, blobs by digest, a lock for the
 * critical sections that change which blobs are referenced, pins for work in flight, and the prune.
 *
 * Digests are `sha256:<64 lower-case hex>`. Names are matched case-insensitively (the stored spelling wins).
 * Errors never carry a server path (store-errors.ts): storage failures are InternalError `<action>: <cause>` (500).
 *
 * Concurrency contract: operations that change which blobs are referenced (manifest writes, removals, prunes) run
 * under `exclusive()`; long work (downloads, imports, quantizations) runs outside it and `pin()`s the digests it will
 * reference; `commitManifest()` re-checks under the lock that every referenced blob exists.
 */
export interface ModelStore {
  /** The store's root directory (OLLAMA_MODELS in the default store). */
  readonly root: string;

  /**
   * Runs `critical` holding the store lock (reentrant inside one critical section). Keep it short.
   * @throws ServerBusyError (503) when another process holds the lock past the acquire timeout; what `critical`
   *   throws.
   */
  exclusive<T>(critical: () => Promise<T>): Promise<T>;

  /**
   * Pins digests for an in-flight create or pull (see BlobPin).
   * @param digests `sha256:<hex>` digests to pin at once.
   */
  pin(digests?: Iterable<string>): BlobPin;

  /** Whether a digest is pinned by an in-flight create or pull of this process. */
  isPinned(digest: string): boolean;

  /**
   * Where a blob's bytes live (an absolute file path: the runner loads weights from it).
   * @throws InternalError for a malformed digest (digests come from manifests, never straight from users).
   */
  blobPath(digest: string): string;

  /** Size in bytes of a blob, or null when it is missing. */
  blobSize(digest: string): Promise<number | null>;

  /**
   * A whole blob (templates, params, config: small layers).
   * @throws InternalError `cannot read blob sha256:…: <cause>`.
   */
  readBlob(digest: string): Promise<Buffer>;

  /**
   * Copies a file into the store (streamed and hashed).
   * @param pin pinned with the digest before the blob appears.
   * @throws InternalError `cannot import file: <cause>` (the source's path is not repeated).
   */
  importFile(sourcePath: string, pin?: BlobPin): Promise<StoredBlob>;

  /**
   * Streams an uploaded body into the store, verified against `expected`.
   * @returns the blob and whether it was new (false when an identical blob already existed).
   * @throws DigestMismatchError (400) `digest mismatch, expected "sha256:…", got "sha256:…"` (nothing is kept);
   *   InternalError `cannot store blob: <cause>`.
   */
  receiveBlob(body: Readable, expected: string): Promise<StoredBlob & { created: boolean }>;

  /**
   * A fresh temporary file path next to the blobs, for producers that write a file themselves (the quantizer):
   * hand it to adoptTempFile() when complete, or remove it.
   * @throws InternalError `cannot create blobs directory: <cause>`.
   */
  newTempBlobPath(): Promise<string>;

  /**
   * Turns a complete temporary file from newTempBlobPath() into a blob (hashed); the file is gone afterwards.
   * @throws InternalError `cannot store blob: <cause>`.
   */
  adoptTempFile(tmp: string, pin?: BlobPin): Promise<StoredBlob>;

  /**
   * Writes bytes as a blob (template, system, params, messages, license, config layers).
   * @throws InternalError `cannot write blob: <cause>`.
   */
  writeBlob(data: string | Buffer, pin?: BlobPin): Promise<StoredBlob>;

  /**
   * Startup hygiene: deletes interrupted temporary files older than `maxAgeMs`; never a valid blob.
   * @returns the file names removed (failures to list are an empty result).
   */
  removeStaleTempFiles(maxAgeMs: number, now?: number): Promise<string[]>;

  /**
   * Startup prune, under the store lock: deletes blobs that no manifest references, no pin holds, and that are at
   * least `minAgeMs` old. Nothing is deleted when some manifest cannot be read (`skipped`).
   * @throws ServerBusyError when the lock cannot be taken; InternalError `cannot sweep orphaned blobs: <cause>`.
   */
  sweepOrphans(minAgeMs: number, now?: number): Promise<SweepResult>;

  /** The stored spelling of a name (matched case-insensitively, an exact match wins), or null when none matches. */
  findExisting(name: ModelName): Promise<ModelName | null>;

  /**
   * The manifest of a name (matched case-insensitively), or null when there is none.
   * @throws InternalError `cannot read manifest of <name>: …` when it exists but is unreadable or malformed.
   */
  readManifest(name: ModelName): Promise<StoredManifest | null>;

  /**
   * Writes a manifest atomically (Go's compact JSON); an existing one with the name in another case is replaced in
   * place. Does not check the blobs (see commitManifest, requireBlobs).
   * @throws InternalError `cannot write manifest of <name>: <cause>`.
   */
  writeManifest(name: ModelName, manifest: Manifest): Promise<StoredManifest>;

  /**
   * Checks, under the store lock, that every blob a manifest references is in the store. Callers that write a
   * manifest themselves (pull) call it inside their own exclusive() section, right before.
   * @param what names the model in the error (`model "x:latest"`).
   * @throws MissingLayerError (500) for the first missing blob.
   */
  requireBlobs(manifest: Manifest, what: string): Promise<void>;

  /**
   * Writes a new model's manifest under the store lock: requireBlobs, write, then prune the replaced manifest's
   * layers that nothing references any more.
   * @throws MissingLayerError (500; nothing written); InternalError for a storage failure.
   */
  commitManifest(name: ModelName, manifest: Manifest): Promise<CommittedManifest>;

  /** Every valid manifest in the store; unreadable ones are skipped. */
  listManifests(): Promise<StoredManifest[]>;

  /**
   * Copies a manifest byte for byte under the store lock (blobs are shared); an existing destination is replaced.
   * @returns null when the source is gone (deleted meanwhile).
   * @throws InternalError `cannot copy manifest: <cause>`.
   */
  copyManifest(source: StoredManifest, destination: ModelName): Promise<CopiedManifest | null>;

  /**
   * Removes a manifest (and the manifest directories left empty) under the store lock; blobs are untouched.
   * @throws InternalError `cannot remove manifest: <cause>`.
   */
  removeManifest(stored: StoredManifest): Promise<void>;

  /**
   * Deletes those of `digests` that no manifest references, under the store lock; pinned ones are kept (and pruned
   * when their last pin is released). Nothing is deleted when some manifest cannot be read.
   * @returns the digests deleted.
   * @throws ServerBusyError when the lock cannot be taken; InternalError `cannot prune blobs: <cause>`.
   */
  pruneLayers(digests: string[]): Promise<string[]>;
}
