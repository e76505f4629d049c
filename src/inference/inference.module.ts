import { DynamicModule, Module, Provider } from '@nestjs/common';
import { CommonModule } from '../common/common.module';
import { ModelsModule } from '../models';
import { ChatController } from './chat.controller';
import { ChatService } from './chat.service';
import { CompletionService } from './completion.service';
import { EmbedController } from './embed.controller';
import { EmbedService } from './embed.service';
import { GenerateController } from './generate.controller';
import { GenerateService } from './generate.service';
import { LlamaRunnerFactory } from './runner/llama.runner';
import { RUNNER_FACTORY, RunnerFactory } from './runner/runner';
import { PsController } from './ps.controller';
import { SchedulerService } from './scheduler.service';

/**
 * Scheduler, runners and generation (ARCHITECTURE.md §4): owns /api/generate, /api/chat, /api/embed and
 * /api/embeddings. Depends on ModelsModule (resolve) and the global Native/Config modules.
 */
@Module({})
export class InferenceModule {
  /** @param runnerFactory a RunnerFactory to use instead of LlamaRunnerFactory (tests). */
  static forRoot(runnerFactory?: RunnerFactory): DynamicModule {
    const factory: Provider = runnerFactory
      ? { provide: RUNNER_FACTORY, useValue: runnerFactory }
      : { provide: RUNNER_FACTORY, useClass: LlamaRunnerFactory };
    return {
      module: InferenceModule,
      imports: [CommonModule, ModelsModule],
      controllers: [GenerateController, ChatController, PsController, EmbedController],
      providers: [factory, SchedulerService, CompletionService, GenerateService, ChatService, EmbedService],
      exports: [SchedulerService, GenerateService, ChatService, EmbedService],
    };
  }
}
