import { Inject, Injectable, Optional } from '@nestjs/common';
import { readFile } from 'node:fs/promises';
import { Observable } from 'rxjs';
import { InvalidRequestError, ModelNotFoundError, RegistryError } from '../common/errors';
import {
  isDigest,
  Manifest,
  manifestDigestsOf,
  ManifestLayer,
  MediaType,
  MODEL_STORE,
  ModelStore,
  StoredManifest,
  storeError,
} from '../models';
import { DEFAULT_TUNING, downloadBlob, TransferTuning } from './blob-download';
import { lookupCredentials } from './registry-credentials';
import { RegistryFiles } from './registry-files';
import { RegistrySession, unexpectedStatus } from './registry-http.client';
import {
  blobUrl,
  manifestUrl,
  RegistryReference,
  resolveReference,
  shortId,
  uploadLocation,
  uploadsUrl,
} from './registry-reference';
import { RegistryProgress } from './registry.types';
import { MODEL_EVENTS, ModelEvents, ModelEventType, publishProgress } from '../observability/model-events';

/** A validated pull, ready to run. */
export interface PullPlan {
  ref: RegistryReference;
}

/** A validated push: the reference and the local manifest to send. */
export interface PushPlan {
  ref: RegistryReference;
  local: StoredManifest;
}

/** A shared in-flight download of one digest (concurrent pulls wait on the same transfer, §6.3). */
interface InFlight {
  promise: Promise<void>;
  waiters: number;
  controller: AbortController;
  completed: number;
  listeners: Set<(completed: number) => void>;
}

/** Minimum interval between two progress records of the same layer, in ms (the final one is always sent). */
const PROGRESS_INTERVAL_MS = 100;

/**
 * Pull and push against Docker Registry v2 / OCI registries (reference/ollama-api.md §3.13, §3.14, §6).
 * `prepare*()` validates (errors become plain 4xx responses); `pull()`/`push()` return cold Observables of progress
 * records — subscribing starts the transfer, unsubscribing (client gone) aborts it, leaving resumable partial files.
 */
@Injectable()
export class RegistryService {
  /** Transfer sizes (tests shrink them to exercise parallel parts and chunked uploads). */
  readonly tuning: TransferTuning = { ...DEFAULT_TUNING };
  private readonly files: RegistryFiles;
  private readonly inFlight = new Map<string, InFlight>();

  constructor(
    @Inject(MODEL_STORE) private readonly store: ModelStore,
    @Optional() @Inject(MODEL_EVENTS) private readonly events?: ModelEvents,
  ) {
    this.files = new RegistryFiles(store);
  }

  /**
   * Validates a pull request.
   * @throws InvalidRequestError `invalid model name` (400, also for an empty name, §5.2);
   *   RegistryError `insecure protocol http` for an explicit `http://` name without `insecure`.
   */
  preparePull(model: string, insecure: boolean): PullPlan {
    return { ref: resolveReference(model, insecure) };
  }

  /**
   * Validates a push request and reads the local manifest.
   * @throws InvalidRequestError `model is required` / `invalid model name` (400); ModelNotFoundError
   *   `model '<name>' not found` (404) when there is no local manifest.
   */
  async preparePush(model: string, insecure: boolean): Promise<PushPlan> {
    if (model === '') throw new InvalidRequestError('model is required', 'model');
    const ref = resolveReference(model, insecure);
    const local = await this.store.readManifest(ref.name);
    if (!local) throw new ModelNotFoundError(ref.name.toShortString());
    return { ref, local };
  }

  /**
   * Pulls a model (§6.3): `pulling manifest`; for each layer then the config, `pulling layer <short_id>` records
   * with digest/total/completed (bytes) — present blobs are reported complete at once; `verifying sha256 digest`,
   * `writing manifest` and `success` (as Ollama's server/images.go PullModel).
   * The manifest is written last, atomically and byte for byte as the registry sent it.
   * Concurrency: the manifest's digests are pinned (ModelStoreRepository.pin) as soon as it is parsed, so a
   * concurrent delete never prunes a blob this pull reuses or has just downloaded; the manifest is written under the
   * store lock after checking that every blob exists; the layers of a manifest it replaces that nothing else uses
   * are pruned there. The lock is never held during a download.
   * Errors: `pull model manifest: file does not exist` (unknown model), `pull model manifest: <status> <reason>[: <registry error>]`,
   * `unauthorized: access denied`, `digest mismatch, file must be downloaded again: want …, got …`,
   * MissingLayerError (500) when another process removed a blob before the manifest was written.
   */
  pull(plan: PullPlan): Observable<RegistryProgress> {
    return this.run('pull.progress', plan.ref, async (emit, signal) => {
      const { ref } = plan;
      emit({ status: 'pulling manifest' });
      const session = new RegistrySession(await lookupCredentials(ref.host));
      const res = await session.fetch({
        method: 'GET',
        url: manifestUrl(ref),
        headers: { accept: MediaType.MANIFEST },
        signal,
      });
      if (res.status === 404) {
        await res.body?.cancel().catch(() => undefined);
        throw new RegistryError('pull model manifest: file does not exist', 404);
      }
      if (!res.ok) throw await unexpectedStatus(res);
      const bytes = Buffer.from(await res.arrayBuffer());
      const manifest = parseManifest(bytes);
      const pin = this.store.pin(manifestDigestsOf(manifest));
      try {
        await this.pullLayers(session, ref, manifest, emit, signal);
        // As Ollama's server/images.go PullModel: these two statuses come between the layers and `success`.
        emit({ status: 'verifying sha256 digest' });
        await this.store.exclusive(async () => {
          await this.store.requireBlobs(manifest, `model "${ref.name.toShortString()}"`);
          emit({ status: 'writing manifest' });
          const previous = await this.store.readManifest(ref.name).catch(() => null);
          await this.files.writeManifestBytes(ref.name, bytes);
          // Like Ollama (§6.3): the layers of a replaced manifest that nothing references any more are removed.
          if (previous) await this.store.pruneLayers(manifestDigestsOf(previous.manifest));
        });
      } finally {
        await pin.release();
      }
      emit({ status: 'success' });
    });
  }

  /** Downloads the layers and config of a pulled manifest that are not in the store yet, with progress records. */
  private async pullLayers(
    session: RegistrySession,
    ref: RegistryReference,
    manifest: Manifest,
    emit: (p: RegistryProgress) => void,
    signal: AbortSignal,
  ): Promise<void> {
    for (const layer of [...manifest.layers, manifest.config]) {
      const status = `pulling layer ${shortId(layer.digest)}`;
      const record = (completed: number): RegistryProgress => ({
        status,
        digest: layer.digest,
        total: layer.size,
        completed,
      });
      if ((await this.store.blobSize(layer.digest)) === layer.size) {
        emit(record(layer.size));
        continue;
      }
      let last = 0;
      emit(record(0));
      await this.download(session, ref, layer, signal, (completed) => {
        const now = Date.now();
        if (now - last < PROGRESS_INTERVAL_MS) return;
        last = now;
        emit(record(completed));
      });
      emit(record(layer.size));
    }
  }

  /**
   * Pushes a local model (§6.5): `retrieving manifest`; for each layer then the config, `pushing layer <short_id>`
   * records (HEAD first: a blob the registry has is reported complete; else POST uploads/ → PUT `?digest=` with the
   * whole blob, or PATCH chunks of `uploadChunkSize` then PUT); then PUT of the manifest bytes with
   * `Content-Type: application/vnd.docker.distribution.manifest.v2+json`; `success`.
   * Errors: `unauthorized: access denied`; `<operation>: <status> <reason>[: <registry error>]` from the registry.
   */
  push(plan: PushPlan): Observable<RegistryProgress> {
    return this.run('push.progress', plan.ref, async (emit, signal) => {
      const { ref, local } = plan;
      emit({ status: 'retrieving manifest' });
      const bytes = await readFile(local.path);
      const manifest = parseManifest(bytes);
      const session = new RegistrySession(await lookupCredentials(ref.host));
      for (const layer of [...manifest.layers, manifest.config]) {
        const record = (completed: number): RegistryProgress => ({
          status: `pushing layer ${shortId(layer.digest)}`,
          digest: layer.digest,
          total: layer.size,
          completed,
        });
        emit(record(0));
        const head = await session.fetch({ method: 'HEAD', url: blobUrl(ref, layer.digest), signal });
        await head.body?.cancel().catch(() => undefined);
        if (head.ok) {
          emit(record(layer.size));
          continue;
        }
        if (head.status !== 404) throw await unexpectedStatus(head);
        await this.upload(session, ref, layer, signal, (completed) => emit(record(completed)));
        emit(record(layer.size));
      }
      const put = await session.fetch({
        method: 'PUT',
        url: manifestUrl(ref),
        headers: { 'content-type': MediaType.MANIFEST },
        body: bytes,
        signal,
      });
      if (!put.ok) throw await unexpectedStatus(put);
      await put.body?.cancel().catch(() => undefined);
      emit({ status: 'success' });
    });
  }

  /**
   * Runs `work` on subscribe with an AbortSignal that fires on unsubscribe. Failures that are not DaemonErrors
   * (file-system errors name server paths) become InternalError `<action>: <errno text>`. Each record is also
   * published as a `type` model event of the subscribing request's principal (GET /api/events).
   */
  private run(
    type: ModelEventType,
    ref: RegistryReference,
    work: (emit: (p: RegistryProgress) => void, signal: AbortSignal) => Promise<void>,
  ): Observable<RegistryProgress> {
    const progress$ = new Observable<RegistryProgress>((subscriber) => {
      const controller = new AbortController();
      work((p) => subscriber.next(p), controller.signal).then(
        () => subscriber.complete(),
        (err: unknown) => subscriber.error(storeError(err, 'model store error')),
      );
      return () => controller.abort();
    });
    return publishProgress(this.events, type, ref.name.toShortString(), progress$, (p) => ({ ...p }));
  }

  /**
   * Downloads one blob, sharing the transfer with concurrent pulls of the same digest. The transfer is aborted only
   * when every waiter has gone.
   */
  private download(
    session: RegistrySession,
    ref: RegistryReference,
    layer: ManifestLayer,
    signal: AbortSignal,
    onProgress: (completed: number) => void,
  ): Promise<void> {
    let entry = this.inFlight.get(layer.digest);
    if (!entry) {
      const controller = new AbortController();
      const created: InFlight = {
        controller,
        waiters: 0,
        completed: 0,
        listeners: new Set(),
        promise: Promise.resolve(),
      };
      created.promise = downloadBlob(
        this.files,
        {
          session,
          url: blobUrl(ref, layer.digest),
          digest: layer.digest,
          size: layer.size,
          signal: controller.signal,
          onProgress: (completed) => {
            created.completed = completed;
            for (const l of created.listeners) l(completed);
          },
        },
        this.tuning,
      ).finally(() => this.inFlight.delete(layer.digest));
      this.inFlight.set(layer.digest, created);
      entry = created;
    }
    const shared = entry;
    shared.waiters++;
    shared.listeners.add(onProgress);
    return new Promise<void>((resolve, reject) => {
      const leave = () => {
        signal.removeEventListener('abort', onAbort);
        shared.listeners.delete(onProgress);
        shared.waiters--;
      };
      const onAbort = () => {
        leave();
        if (shared.waiters === 0) shared.controller.abort();
        reject(new RegistryError('pull canceled'));
      };
      signal.addEventListener('abort', onAbort);
      shared.promise.then(
        () => (leave(), resolve()),
        (err: unknown) => (leave(), reject(err)),
      );
    });
  }

  /** Uploads one blob (§6.5): monolithic PUT up to `uploadChunkSize`, chunked PATCH above. */
  private async upload(
    session: RegistrySession,
    ref: RegistryReference,
    layer: ManifestLayer,
    signal: AbortSignal,
    onProgress: (completed: number) => void,
  ): Promise<void> {
    const start = await session.fetch({ method: 'POST', url: uploadsUrl(ref), signal });
    if (start.status !== 202) throw await unexpectedStatus(start);
    await start.body?.cancel().catch(() => undefined);
    let location = uploadLocation(start, uploadsUrl(ref));
    const path = this.files.blobPath(layer.digest);
    const chunk = this.tuning.uploadChunkSize;
    let finalBody: Buffer = Buffer.alloc(0);
    if (layer.size <= chunk) {
      finalBody = await this.files.readRange(path, 0, layer.size);
    } else {
      for (let offset = 0; offset < layer.size; offset += chunk) {
        const end = Math.min(layer.size, offset + chunk);
        const body = await this.files.readRange(path, offset, end);
        const res = await session.fetch({
          method: 'PATCH',
          url: location,
          headers: { 'content-type': 'application/octet-stream', 'content-range': `${offset}-${end - 1}` },
          body,
          signal,
        });
        if (res.status !== 202) throw await unexpectedStatus(res);
        await res.body?.cancel().catch(() => undefined);
        location = uploadLocation(res, location.toString());
        onProgress(end);
      }
    }
    location.searchParams.set('digest', layer.digest);
    const done = await session.fetch({
      method: 'PUT',
      url: location,
      headers: { 'content-type': 'application/octet-stream' },
      body: finalBody,
      signal,
    });
    if (done.status !== 201) throw await unexpectedStatus(done);
    await done.body?.cancel().catch(() => undefined);
  }
}

/**
 * Parses and checks a manifest: schema version 2, a config and layers with `sha256:<64 hex>` digests (they become
 * file names) and non-negative integer sizes.
 * @throws RegistryError `pull model manifest: invalid manifest`.
 */
export function parseManifest(bytes: Buffer): Manifest {
  let m: Manifest;
  try {
    m = JSON.parse(bytes.toString('utf8')) as Manifest;
  } catch {
    throw new RegistryError('pull model manifest: invalid manifest');
  }
  const okLayer = (l: ManifestLayer | undefined) =>
    !!l && typeof l.digest === 'string' && isDigest(l.digest) && Number.isSafeInteger(l.size) && l.size >= 0;
  if (!m || m.schemaVersion !== 2 || !okLayer(m.config) || !Array.isArray(m.layers) || !m.layers.every(okLayer)) {
    throw new RegistryError('pull model manifest: invalid manifest');
  }
  return m;
}
