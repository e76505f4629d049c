import { Module } from '@nestjs/common';
import { CommonModule } from '../common/common.module';
import { ModelStoreRepository } from './model-store.repository';
import { ModelsController } from './models.controller';
import { ModelsService } from './models.service';

/**
 * The model store and catalogue (ARCHITECTURE.md §4): names, manifests and blobs on disk, Modelfiles, and the
 * /api/tags, /api/show and /api/create routes. Exports ModelsService only (never the repository).
 */
@Module({
  imports: [CommonModule],
  controllers: [ModelsController],
  providers: [ModelStoreRepository, ModelsService],
  exports: [ModelsService],
})
export class ModelsModule {}
