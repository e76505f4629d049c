import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { Observable, Subject } from 'rxjs';
import { InvalidRequestError, ModelNotFoundError } from '../common/errors';
import { manifestDigestsOf, MediaType } from './manifest';
import { ModelName } from './model-name';
import { MODEL_STORE, ModelStore, StoredManifest } from './model-store';
import { describeIoError } from './store-errors';

/** Temporary files in blobs/ older than this are interrupted writes, deleted at startup (§7.7). */
export const STALE_TEMP_AGE_MS = 60 * 60 * 1000;

/** A model removed by delete (for listeners that must let go of it, e.g. the scheduler). */
export interface DeletedModel {
  /** Shortest display name of the deleted manifest. */
  name: string;
  /** Absolute path of its weights blob (whether or not the blob itself was removed). */
  modelPath: string;
}

/** Go's %q for the strings in Ollama's copy/delete messages (JSON escaping is the same for printable text). */
function goQuote(s: string): string {
  return JSON.stringify(s);
}

/**
 * Copy, delete and prune (ARCHITECTURE.md §13): what changes which manifests exist and which blobs they keep alive,
 * plus the startup hygiene of the blob store. Publishes `deleted$`, which the scheduler follows to unload the
 * weights of a deleted model (§3.12) — ModelsModule never depends on the scheduler.
 */
@Injectable()
export class ModelLifecycleService implements OnModuleInit {
  private readonly logger = new Logger(ModelLifecycleService.name);
  private readonly deletions = new Subject<DeletedModel>();
  /** Emits after each successful delete (the scheduler unloads the weights: reference/ollama-api.md §3.12). */
  readonly deleted$: Observable<DeletedModel> = this.deletions.asObservable();

  constructor(@Inject(MODEL_STORE) private readonly store: ModelStore) {}

  /**
   * Startup hygiene (Ollama's Serve, reference/ollama-api.md §7.7): removes interrupted temporary files older than
   * STALE_TEMP_AGE_MS from blobs/, then, under the store lock, blobs no manifest references that are older than
   * STALE_TEMP_AGE_MS too (younger ones may belong to another daemon's create or pull, or a fresh upload). Nothing
   * is swept when a manifest cannot be read; `partial/` downloads are never touched. Failures are logged, never
   * fatal.
   */
  async onModuleInit(): Promise<void> {
    const removed = await this.store.removeStaleTempFiles(STALE_TEMP_AGE_MS).catch((err: unknown) => {
      this.logger.warn(`cannot clean blobs/: ${describeIoError(err)}`);
      return [];
    });
    if (removed.length > 0) this.logger.log(`removed ${removed.length} stale temporary file(s) from blobs/`);
    const swept = await this.store.sweepOrphans(STALE_TEMP_AGE_MS).catch((err: unknown) => {
      this.logger.warn(`cannot sweep orphaned blobs: ${(err as Error).message}`);
      return null;
    });
    if (swept?.skipped) this.logger.warn('orphaned blobs not swept: some manifest cannot be read');
    if (swept && swept.count > 0) {
      this.logger.log(`swept ${swept.count} orphaned blob(s) (${swept.bytes} bytes) from blobs/`);
    }
  }

  /**
   * POST /api/copy (§3.11): copies the source manifest to the destination name; blobs are shared. An existing
   * destination is replaced (its layers that nothing else uses are pruned). Source is looked up case-insensitively.
   * The copy and the prune form one critical section of the store lock (§3.11).
   * @throws InvalidRequestError `source "<x>" is invalid` / `destination "<x>" is invalid` (checked before anything
   *   is touched); ModelNotFoundError `model "<source>" not found`.
   */
  async copy(source: string, destination: string): Promise<void> {
    const src = ModelName.parse(source);
    if (!src) throw new InvalidRequestError(`source ${goQuote(source)} is invalid`, 'source');
    const dst = ModelName.parse(destination);
    if (!dst) throw new InvalidRequestError(`destination ${goQuote(destination)} is invalid`, 'destination');
    const stored = await this.store.readManifest(src);
    if (!stored) throw new ModelNotFoundError(source, `model ${goQuote(source)} not found`);
    const existing = await this.store.findExisting(dst);
    if (existing?.equalsIgnoreCase(stored.name)) return;
    const copied = await this.store.exclusive(async () => {
      const result = await this.store.copyManifest(stored, dst);
      if (result?.replaced) await this.pruneReplaced(result.replaced);
      return result;
    });
    if (!copied) throw new ModelNotFoundError(source, `model ${goQuote(source)} not found`); // deleted meanwhile
    this.logger.log(`copied ${stored.name.toShortString()} to ${dst.toShortString()}`);
  }

  /**
   * DELETE /api/delete (§3.12): removes the manifest (name matched case-insensitively), prunes empty manifest
   * directories, then deletes its blobs that no other manifest references (shared ones stay) and that no in-flight
   * create or pull has pinned. Reading, removing and pruning form one critical section of the store lock.
   * Emits on `deleted$`.
   * @throws InvalidRequestError `model is required` / `name "<x>" is invalid`; ModelNotFoundError
   *   `model '<x>' not found`; InternalError for an unreadable manifest (nothing is removed then);
   *   ServerBusyError (503) when another process holds the store lock too long.
   */
  async delete(input: string): Promise<void> {
    if (!input) throw new InvalidRequestError('model is required', 'model');
    const name = ModelName.parse(input);
    if (!name) throw new InvalidRequestError(`name ${goQuote(input)} is invalid`, 'model');
    const stored = await this.store.exclusive(async () => {
      const found = await this.store.readManifest(name);
      if (!found) return null;
      await this.store.removeManifest(found);
      await this.store.pruneLayers(manifestDigestsOf(found.manifest));
      return found;
    });
    if (!stored) throw new ModelNotFoundError(input, ModelNotFoundError.notFoundMessage(input));
    this.logger.log(`deleted ${stored.name.toShortString()}`);
    const weights = stored.manifest.layers.find((l) => l.mediaType === MediaType.MODEL);
    if (weights) {
      this.deletions.next({ name: stored.name.toShortString(), modelPath: this.store.blobPath(weights.digest) });
    }
  }

  /** Deletes the layers of a manifest that was just replaced, unless another manifest still uses them. */
  private async pruneReplaced(old: StoredManifest): Promise<void> {
    const removed = await this.store.pruneLayers(manifestDigestsOf(old.manifest));
    if (removed.length > 0) this.logger.log(`pruned ${removed.length} unused blob(s) of ${old.name.toShortString()}`);
  }
}
