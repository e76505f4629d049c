import { DynamicModule, Module } from '@nestjs/common';
import { CommonModule } from '../common/common.module';
import { ModelsModule } from '../models';
import { AnthropicController, AnthropicMessagesService } from './anthropic';
import { OpenAIController } from './openai';

/**
 * The compatibility layers on the daemon's port (reference/ollama-api.md §12): the OpenAI `/v1` routes (and the
 * Anthropic `/v1/messages` routes). Translation only: controllers call the Inference and Models services and render
 * each dialect's errors with their own controller-bound filters.
 *
 * @param inference the SAME InferenceModule dynamic module the root imports, so both share one scheduler.
 */
@Module({})
export class CompatModule {
  static forRoot(inference: DynamicModule): DynamicModule {
    return {
      module: CompatModule,
      imports: [CommonModule, ModelsModule, inference],
      controllers: [OpenAIController, AnthropicController],
      providers: [AnthropicMessagesService],
    };
  }
}
