import { Module } from '@nestjs/common';
import { CommonModule } from '../common/common.module';
import { RegistryService } from './registry.service';

/**
 * Pull/push against Docker Registry v2 / OCI registries (reference/ollama-api.md §3.13, §3.14, §6). The routes
 * (RegistryController) are mounted by LlamadModule with the native surface; the model store comes from the
 * ModelsModule instance the importer adds to `imports` (LlamadModule shares one ModelsModule among its modules).
 */
@Module({
  imports: [CommonModule],
  providers: [RegistryService],
  exports: [RegistryService],
})
export class RegistryModule {}
