import { Module } from '@nestjs/common';
import { CommonModule } from '../common/common.module';
import { BlobsService } from './blobs.service';
import { ModelCreateExecutor } from './model-create.executor';
import { ModelCreatePlanner } from './model-create.planner';
import { ModelCreateQuantizer } from './model-create.quantizer';
import { ModelLifecycleService } from './model-lifecycle.service';
import { ModelListService } from './model-list.service';
import { ModelResolverService } from './model-resolver.service';
import { ModelShowService } from './model-show.service';
import { MODEL_STORE } from './model-store';
import { ModelStoreRepository } from './model-store.repository';
import { ModelsService } from './models.service';

/**
 * The model store and catalogue (ARCHITECTURE.md §4): names, manifests and blobs on disk, Modelfiles. The routes
 * (/api/tags, /api/show, /api/create, /api/copy, /api/delete, /api/blobs: ModelsController, BlobsController) are
 * mounted by LlamadModule with the surface they belong to. Needs DaemonConfig and NATIVE_BINDING from the module
 * that imports it (LlamadModule's core; nothing is global). The store sits behind MODEL_STORE
 * (default: ModelStoreRepository, Ollama's on-disk layout); the catalogue is one provider per job behind the
 * ModelsService facade. Exports ModelsService, ModelLifecycleService (its `deleted$` event: the scheduler unloads
 * deleted weights), and the store — MODEL_STORE and ModelStoreRepository — for the registry module, whose pull/push
 * move blobs and manifests in and out of it.
 */
@Module({
  imports: [CommonModule],
  providers: [
    ModelStoreRepository,
    { provide: MODEL_STORE, useExisting: ModelStoreRepository },
    ModelResolverService,
    ModelListService,
    ModelShowService,
    BlobsService,
    ModelLifecycleService,
    ModelCreateQuantizer,
    ModelCreatePlanner,
    ModelCreateExecutor,
    ModelsService,
  ],
  exports: [ModelsService, ModelLifecycleService, MODEL_STORE, ModelStoreRepository],
})
export class ModelsModule {}
