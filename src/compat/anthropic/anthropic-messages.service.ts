import { Injectable } from '@nestjs/common';
import { concatMap, defer, from, map, Observable, of, switchMap } from 'rxjs';
import { ChatCommand, ChatService, GenerationEvent } from '../../inference';
import { ModelsService } from '../../models';
import { anthropicId } from './anthropic-ids';
import { estimateInputTokens } from './anthropic-request.mapper';
import { AnthropicMessageAccumulator } from './anthropic-response.mapper';
import { AnthropicStreamConverter } from './anthropic-stream.converter';
import { AnthropicMessage, SseFrame } from './anthropic.types';

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

  private events(cmd: ChatCommand): Observable<GenerationEvent> {
    return defer(() => this.adapt(cmd)).pipe(switchMap((c) => this.chat.chat(c)));
  }

  /** The whole message (non-streaming). Cold; errors before any output. */
  message(cmd: ChatCommand): Observable<AnthropicMessage> {
    return defer(() => {
      const acc = new AnthropicMessageAccumulator(anthropicId('msg'), cmd.model);
      return this.events(cmd).pipe(
        concatMap((e) => {
          acc.add(e);
          return e.kind === 'done' ? of(acc.result()) : of();
        }),
      );
    });
  }

  /** SSE frames (streaming); the first frame is only produced with the first generation event. Cold. */
  stream(cmd: ChatCommand): Observable<SseFrame> {
    return defer(() => {
      const converter = new AnthropicStreamConverter(anthropicId('msg'), cmd.model, estimateInputTokens(cmd));
      return new Observable<SseFrame>((subscriber) =>
        this.events(cmd).subscribe({
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

  /** Prompt tokens of the request, rendered and tokenized like a real message (loads the model). */
  countTokens(cmd: ChatCommand): Observable<number> {
    return defer(() => this.adapt(cmd)).pipe(switchMap((c) => this.chat.countPromptTokens(c)));
  }
}
