import { Inject, Injectable, Optional } from '@nestjs/common';
import type { Readable } from 'node:stream';
import type { Observable } from 'rxjs';
import { BlobsService } from './blobs.service';
import type { ModelConfig } from './manifest';
import { ModelCreateExecutor } from './model-create.executor';
import { ModelCreatePlanner } from './model-create.planner';
import { CreateModelCommand, CreatePlan, CreateProgress, CreateRequester, LOCAL_REQUESTER } from './model-create.types';
import { DeletedModel, ModelLifecycleService } from './model-lifecycle.service';
import { ListedModel, ModelListService } from './model-list.service';
import type { ModelName } from './model-name';
import { configDetails, ModelResolverService } from './model-resolver.service';
import { ModelInfo, ModelShowService } from './model-show.service';
import type { ModelDetails, ResolvedModel } from './model.types';
import { MODEL_EVENTS, ModelEvents, publishProgress } from '../observability/model-events';

// The catalogue's types and constants, importable from here as before the service was split by job.
export * from './model-create.types';
export { DeletedModel, STALE_TEMP_AGE_MS } from './model-lifecycle.service';
export { ListedModel } from './model-list.service';
export { deriveCapabilities } from './model-resolver.service';
export { ModelInfo } from './model-show.service';

/**
 * The model catalogue (ARCHITECTURE.md §4 ModelsModule): one entry point for controllers, inference and the
 * library facade, delegating each job to its own provider (§13): name resolution and capabilities
 * (ModelResolverService), /api/tags (ModelListService), /api/show (ModelShowService), /api/blobs (BlobsService),
 * copy/delete/prune and the `deleted$` event (ModelLifecycleService), and /api/create (ModelCreatePlanner, then
 * ModelCreateExecutor with ModelCreateQuantizer). Callers that need one job only may inject its provider instead.
 */
@Injectable()
export class ModelsService {
  constructor(
    private readonly resolver: ModelResolverService,
    private readonly listing: ModelListService,
    private readonly shower: ModelShowService,
    private readonly blobs: BlobsService,
    private readonly lifecycle: ModelLifecycleService,
    private readonly planner: ModelCreatePlanner,
    private readonly executor: ModelCreateExecutor,
    @Optional() @Inject(MODEL_EVENTS) private readonly events?: ModelEvents,
  ) {}

  /** `details` of tags/show from a config (§3.6): parent_model is always empty for local GGUF models. */
  static details(config: ModelConfig): ModelDetails {
    return configDetails(config);
  }

  /** Emits after each successful delete (the scheduler unloads the weights: reference/ollama-api.md §3.12). */
  get deleted$(): Observable<DeletedModel> {
    return this.lifecycle.deleted$;
  }

  /** HEAD /api/blobs/:digest (§3.10); see BlobsService.checkBlob. */
  checkBlob(digest: string): Promise<void> {
    return this.blobs.checkBlob(digest);
  }

  /** POST /api/blobs/:digest (§3.10); see BlobsService.receiveBlob. @returns true when the blob was created. */
  receiveBlob(digest: string, body: Readable): Promise<boolean> {
    return this.blobs.receiveBlob(digest, body);
  }

  /** POST /api/copy (§3.11); see ModelLifecycleService.copy. */
  copy(source: string, destination: string): Promise<void> {
    return this.lifecycle.copy(source, destination);
  }

  /** DELETE /api/delete (§3.12); see ModelLifecycleService.delete. Emits on `deleted$`. */
  delete(input: string): Promise<void> {
    return this.lifecycle.delete(input);
  }

  /** The model /api/ps shows for a loaded weights blob (§3.7); see ModelListService.findByWeights. */
  findByWeights(modelPath: string): Promise<ListedModel | null> {
    return this.listing.findByWeights(modelPath);
  }

  /**
   * Resolves a model reference to its manifest, layers and GGUF facts; see ModelResolverService.resolve.
   * @param notFoundMessage builds the 404 text (default `model '<input>' not found`).
   */
  resolve(input: string, notFoundMessage?: (name: ModelName) => string): Promise<ResolvedModel> {
    return this.resolver.resolve(input, notFoundMessage);
  }

  /** Every local model for /api/tags (§3.6), newest first; see ModelListService.list. */
  list(): Promise<ListedModel[]> {
    return this.listing.list();
  }

  /** Everything /api/show returns (§3.8); see ModelShowService.show. */
  show(model: string, verbose: boolean): Promise<ModelInfo> {
    return this.shower.show(model, verbose);
  }

  /**
   * Validates a create request and finds its base, before any progress is streamed; see
   * ModelCreatePlanner.prepareCreate.
   * @param requester who asks (LOCAL_REQUESTER for in-process callers; the controller passes the client's).
   */
  prepareCreate(cmd: CreateModelCommand, requester: CreateRequester = LOCAL_REQUESTER): Promise<CreatePlan> {
    return this.planner.prepareCreate(cmd, requester);
  }

  /**
   * Runs a validated create (cold); see ModelCreateExecutor.create. Each record's status is also published as a
   * `create.step` model event of the subscribing request's principal (GET /api/events).
   */
  create(plan: CreatePlan): Observable<CreateProgress> {
    const model = plan.name.toShortString();
    return publishProgress(this.events, 'create.step', model, this.executor.create(plan), (p) => ({
      status: p.status,
    }));
  }
}
