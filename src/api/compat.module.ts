import { Module } from '@nestjs/common';
import { CommonModule } from '../common/common.module';
import { DaemonConfig } from '../config';
import { AnthropicMessagesService } from './anthropic';
import {
  RESPONSES_STORE_OPTIONS,
  ResponsesService,
  ResponsesStore,
  type ResponsesStoreOptions,
} from './openai/responses';

/**
 * The services of the compatibility layers (reference/ollama-api.md §12): the OpenAI `/v1/responses` service with
 * its in-memory ResponsesStore and the Anthropic `/v1/messages` service. Their controllers (OpenAIController,
 * ResponsesController, AnthropicController) are mounted by LlamadModule with the `openai` and `anthropic` surfaces;
 * they are translation only and render each dialect's errors with their own controller-bound filters. The importer
 * provides DaemonConfig and the SAME InferenceModule and ModelsModule instances the rest uses (one scheduler).
 */
@Module({
  imports: [CommonModule],
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
  exports: [AnthropicMessagesService, ResponsesService],
})
export class CompatModule {}
