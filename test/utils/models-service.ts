import { NativeBindingLoader } from '../../src/native';
import { BlobsService } from '../../src/models/blobs.service';
import { ModelCreateExecutor } from '../../src/models/model-create.executor';
import { ModelCreatePlanner } from '../../src/models/model-create.planner';
import { ModelCreateQuantizer } from '../../src/models/model-create.quantizer';
import { ModelLifecycleService } from '../../src/models/model-lifecycle.service';
import { ModelListService } from '../../src/models/model-list.service';
import { ModelResolverService } from '../../src/models/model-resolver.service';
import { ModelShowService } from '../../src/models/model-show.service';
import type { ModelStore } from '../../src/models/model-store';
import { ModelsService } from '../../src/models/models.service';

/** ModelsService and the providers behind it, wired by hand over one store (what ModelsModule provides). */
export interface ModelCatalog {
  models: ModelsService;
  resolver: ModelResolverService;
  lifecycle: ModelLifecycleService;
}

/**
 * Wires the catalogue by hand (no Nest container) over `store`.
 * @param loadBinding the addon loader quantization uses (none: quantization fails with 500).
 */
export function newModelCatalog(store: ModelStore, loadBinding?: NativeBindingLoader): ModelCatalog {
  const resolver = new ModelResolverService(store);
  const lifecycle = new ModelLifecycleService(store);
  const quantizer = new ModelCreateQuantizer(store, loadBinding);
  const models = new ModelsService(
    resolver,
    new ModelListService(store, resolver),
    new ModelShowService(resolver),
    new BlobsService(store),
    lifecycle,
    new ModelCreatePlanner(store, resolver, quantizer),
    new ModelCreateExecutor(store, quantizer),
  );
  return { models, resolver, lifecycle };
}

/** Just the ModelsService of newModelCatalog. */
export function newModelsService(store: ModelStore, loadBinding?: NativeBindingLoader): ModelsService {
  return newModelCatalog(store, loadBinding).models;
}
