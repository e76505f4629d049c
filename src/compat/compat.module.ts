import { DynamicModule, Module } from '@nestjs/common';
import { CommonModule } from '../common/common.module';
import { DaemonConfig } from '../config';
import { ModelsModule } from '../models';
import { AnthropicController, AnthropicMessagesService } from './anthropic';
import { OpenAIController } from './openai';
import {
  RESPONSES_STORE_OPTIONS,
  ResponsesController,
  ResponsesService,
  ResponsesStore,
  type ResponsesStoreOptions,
} from './responses';

/**
 * The compatibility layers on the daemon's port (reference/ollama-api.md §12): the OpenAI `/v1` routes (including
 * `/v1/responses` with its in-memory ResponsesStore) and the Anthropic `/v1/messages` routes. Translation only:
 * controllers call the Inference and Models services and render each dialect's errors with their own controller-bound
 * filters.
 *
 * @param inference the SAME InferenceModule dynamic module the root imports, so both share one scheduler.
 */
@Module({})
export class CompatModule {
  static forRoot(inference: DynamicModule): DynamicModule {
    return {
      module: CompatModule,
      imports: [CommonModule, ModelsModule, inference],
      controllers: [OpenAIController, ResponsesController, AnthropicController],
      providers: [
        AnthropicMessagesService,
        ResponsesService,
        ResponsesStore,
        {
          provide: RESPONSES_STORE_OPTIONS,
          inject: [DaemonConfig],
          useFactory: (config: DaemonConfig): ResponsesStoreOptions => ({
            maxResponses: config.responsesMax,
            ttlMs: config.responsesTtlMs,
          }),
        },
      ],
    };
  }
}
