import { Module } from '@nestjs/common';
import { CommonModule } from '../common/common.module';
import { GenerationHooksModule } from '../observability/generation-hooks.module';
import { ChatService } from './chat.service';
import { CompletionService } from './completion.service';
import { ContextLengthService } from './context-length.service';
import { EmbedService } from './embed.service';
import { GenerateService } from './generate.service';
import { PromptService } from './prompt';
import { SchedulerService } from '../scheduler';
import { RerankService } from './rerank.service';
import { TokenizeService } from './tokenize.service';

/**
 * Scheduler, runners and generation (ARCHITECTURE.md §4): the services behind /api/generate, /api/chat, /api/embed
 * and /api/embeddings (their controllers are mounted by LlamadModule with the native surface). Nothing global: the
 * importer provides DaemonConfig, RUNNER_FACTORY and TEMPLATE_RENDERER (LlamadModule's core) and the shared
 * ModelsModule instance.
 */
@Module({
  imports: [CommonModule, GenerationHooksModule],
  providers: [
    SchedulerService,
    PromptService,
    CompletionService,
    GenerateService,
    ChatService,
    EmbedService,
    TokenizeService,
    RerankService,
    ContextLengthService,
  ],
  exports: [
    SchedulerService,
    GenerateService,
    ChatService,
    EmbedService,
    TokenizeService,
    RerankService,
    ContextLengthService,
  ],
})
export class InferenceModule {}
