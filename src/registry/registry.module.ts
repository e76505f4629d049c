import { Module } from '@nestjs/common';
import { CommonModule } from '../common/common.module';
import { ModelsModule } from '../models';
import { RegistryController } from './registry.controller';
import { RegistryService } from './registry.service';

/** Pull/push against Docker Registry v2 / OCI registries (reference/ollama-api.md §3.13, §3.14, §6). */
@Module({
  imports: [CommonModule, ModelsModule],
  controllers: [RegistryController],
  providers: [RegistryService],
  exports: [RegistryService],
})
export class RegistryModule {}
