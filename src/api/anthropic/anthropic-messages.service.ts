import { Injectable } from '@nestjs/common';
import { concatMap, defer, from, map, Observable, of, switchMap } from 'rxjs';
import { ChatCommand, ChatObserver, ChatService, GenerationEvent } from '../../generation';
import { ModelsService } from '../../models';
import { anthropicId } from './anthropic-ids';
import { estimateInputTokens } from './anthropic-request.mapper';
import { AnthropicMessageAccumulator } from './anthropic-response.mapper';
import { AnthropicStreamConverter } from './anthropic-stream.converter';
import { AnthropicMessage, SseFrame } from './anthropic.types';

/** The request's `stop_sequences` (fromMessagesRequest puts them in the `stop` option). */
function stopSequences(cmd: ChatCommand): string[] | undefined {
  const stop = cmd.options.stop;
  return Array.isArray(stop) ? stop : undefined;
}

/**
 * /v1/messages in domain terms: translation only, over ChatService (reference/ollama-api.md §12.8). A `thinking`
 * request for a model without the thinking capability is dropped silently (instead of the native 400).
 */
@Injectable()
export class AnthropicMessagesService {
  constructor(
    private readonly chat: ChatService,
    private readonly models: ModelsService,
  ) {}

  /** Clears `think` when the model cannot think. Errors: ModelNotFoundError (404), InvalidRequestError (400). */
  private adapt(cmd: ChatCommand): Observable<ChatCommand> {
    if (cmd.think === undefined || cmd.think === false) return of(cmd);
    return from(this.models.resolve(cmd.model)).pipe(
      map((model) => (model.capabilities.includes('thinking') ? cmd : { ...cmd, think: undefined })),
    );
  }

  private events(cmd: ChatCommand, observer?: ChatObserver): Observable<GenerationEvent> {
    return defer(() => this.adapt(cmd)).pipe(switchMap((c) => this.chat.chat(c, observer)));
  }

  /** The whole message (non-streaming). Cold; errors before any output. */
  message(cmd: ChatCommand): Observable<AnthropicMessage> {
    return defer(() => {
      const acc = new AnthropicMessageAccumulator(anthropicId('msg'), cmd.model, stopSequences(cmd));
      return this.events(cmd).pipe(
        concatMap((e) => {
          acc.add(e);
          return e.kind === 'done' ? of(acc.result()) : of();
        }),
      );
    });
  }

  /**
   * SSE frames (streaming); the first frame is only produced with the first generation event, after the prompt was
   * built, so `message_start` carries the real prompt size (the same count as count_tokens). Cold.
   */
  stream(cmd: ChatCommand): Observable<SseFrame> {
    return defer(() => {
      const converter = new AnthropicStreamConverter(
        anthropicId('msg'),
        cmd.model,
        estimateInputTokens(cmd),
        stopSequences(cmd),
      );
      const observer: ChatObserver = { onPrompt: (tokens) => converter.setPromptTokens(tokens) };
      return new Observable<SseFrame>((subscriber) =>
        this.events(cmd, observer).subscribe({
          next: (e) => converter.process(e).forEach((f) => subscriber.next(f)),
          error: (err: unknown) => subscriber.error(err),
          complete: () => {
            converter.finish().forEach((f) => subscriber.next(f));
            subscriber.complete();
          },
        }),
      );
    });
  }

  /**
   * Prompt tokens of the request (/v1/messages/count_tokens): ChatService.countPromptTokens, which renders and
   * tokenizes with the same step as the messages path (PromptService.countChat) after the same adaptation (thinking
   * dropped for models without it), so it equals `input_tokens + cache_read_input_tokens` of the same /v1/messages
   * request. Loads the model (reusing a loaded runner with a larger context).
   */
  countTokens(cmd: ChatCommand): Observable<number> {
    return defer(() => this.adapt(cmd)).pipe(switchMap((c) => this.chat.countPromptTokens(c)));
  }
}
