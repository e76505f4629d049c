import { Module } from '@nestjs/common';
import { CommonModule } from '../common/common.module';
import { BlobsController } from './blobs.controller';
import { ModelStoreRepository } from './model-store.repository';
import { ModelsController } from './models.controller';
import { ModelsService } from './models.service';

/**
 * The model store and catalogue (ARCHITECTURE.md §4): names, manifests and blobs on disk, Modelfiles, and the
 * /api/tags, /api/show, /api/create, /api/copy, /api/delete and /api/blobs routes. Exports ModelsService, and the
 * ModelStoreRepository for the registry module, whose pull/push move blobs and manifests in and out of the store.
 */
@Module({
  imports: [CommonModule],
  controllers: [ModelsController, BlobsController],
  providers: [ModelStoreRepository, ModelsService],
  exports: [ModelsService, ModelStoreRepository],
})
export class ModelsModule {}
