import { Module } from '@nestjs/common';
import { CommonModule } from '../common/common.module';
import { AnthropicMessagesService } from './anthropic';
import { ResponsesService } from './openai/responses';
import { TranscriptionService } from './openai/audio';

/**
 * The services of the compatibility layers (reference/ollama-api.md §12): the OpenAI `/v1/responses` service (over
 * the RESPONSES_STORE the importer provides: LlamadModule's core, replaceable by a host), the `/v1/audio/*` transcription service and the Anthropic `/v1/messages` service. Their controllers (OpenAIController,
 * ResponsesController, AnthropicController) are mounted by LlamadModule with the `openai` and `anthropic` surfaces;
 * they are translation only and render each dialect's errors with their own controller-bound filters. The importer
 * provides DaemonConfig and the SAME InferenceModule and ModelsModule instances the rest uses (one scheduler).
 */
@Module({
  imports: [CommonModule],
  providers: [AnthropicMessagesService, ResponsesService, TranscriptionService],
  exports: [AnthropicMessagesService, ResponsesService, TranscriptionService],
})
export class CompatModule {}
