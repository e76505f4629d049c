import { Inject, Injectable } from '@nestjs/common';
import { defer, from, map, Observable, of, switchMap } from 'rxjs';
import { DaemonError, ErrorCode } from '../../../common/errors';
import { ChatCommand, ChatMessage, ChatService } from '../../../generation';
import { ModelsService } from '../../../models';
import { responsesId } from './responses-ids';
import { decodeResponsesRequest, DecodedResponsesRequest, previousResponseIdOf } from './responses-request.mapper';
import { ResponsesStreamConverter } from './responses-stream.converter';
import { RESPONSES_STORE, ResponsesStore } from './responses.store';
import { ResponseDeleted, ResponseObject, ResponseStreamEvent } from './responses.types';

/**
 * A response id that is not (or no longer) in the store: 404 in OpenAI's shape, `param` naming the field
 * (`previous_response_id`) when the id came from the body. The SDK raises NotFoundError.
 */
export class ResponseNotFoundError extends DaemonError {
  readonly code = ErrorCode.MODEL_NOT_FOUND;
  constructor(
    readonly responseId: string,
    readonly param?: string,
  ) {
    super(`Response with id '${responseId}' not found.`);
  }
}

/** A decoded request ready to run: its command, echo, and the conversation a stored result continues. */
export interface PreparedResponse extends DecodedResponsesRequest {
  /** The stored conversation of previous_response_id ([] without one). */
  prior: readonly ChatMessage[];
  /** The principal the result is stored for (`Principal.id`: only it can retrieve, continue or delete it). */
  owner: string;
}

/** A streamed run: the events, and the in-band `error` event for a failure after the first event. */
export interface ResponsesStreamRun {
  events$: Observable<ResponseStreamEvent>;
  errorEvent(err: unknown): ResponseStreamEvent;
}

/**
 * `/v1/responses` in domain terms (reference/ollama-api.md §12.6): translation over ChatService (the same scheduler as
 * every route) plus the in-memory ResponsesStore for `store`, `previous_response_id`, retrieve and delete (beyond
 * Ollama, which is stateless). `reasoning.effort` for a model without the thinking capability is dropped silently
 * (as the Anthropic layer does) instead of the native 400, since agent clients send it by default.
 */
@Injectable()
export class ResponsesService {
  constructor(
    private readonly chat: ChatService,
    private readonly models: ModelsService,
    @Inject(RESPONSES_STORE) private readonly store: ResponsesStore,
  ) {}

  /**
   * Decodes a request body, prepending the stored conversation of `previous_response_id`.
   * @param owner the caller's principal id: only its own responses can be continued, and the result is stored for it.
   * @throws InvalidRequestError (400) for a malformed body; ResponseNotFoundError (404) for an unknown
   *   previous_response_id (also one created with `store: false`, expired, or another principal's).
   */
  prepare(body: unknown, startedAt: bigint, owner: string): PreparedResponse {
    const previousId = previousResponseIdOf(body);
    let prior: PreparedResponse['prior'] = [];
    if (previousId !== undefined) {
      const stored = this.store.get(owner, previousId);
      if (!stored) throw new ResponseNotFoundError(previousId, 'previous_response_id');
      prior = stored.conversation;
    }
    return { ...decodeResponsesRequest(body, prior, startedAt), prior, owner };
  }

  /** The non-streamed answer: the final Response object (cold; errors before any output reject). */
  respond(p: PreparedResponse): Observable<ResponseObject> {
    return defer(() => {
      const converter = new ResponsesStreamConverter(responsesId('resp'), p.echo);
      return new Observable<ResponseObject>((subscriber) =>
        this.events(p, converter).subscribe({
          error: (err: unknown) => subscriber.error(err),
          complete: () => {
            if (converter.response) subscriber.next(converter.response);
            subscriber.complete();
          },
        }),
      );
    });
  }

  /** The streamed answer: SSE events from `response.created` to `response.completed` / `response.incomplete`. */
  stream(p: PreparedResponse): ResponsesStreamRun {
    const converter = new ResponsesStreamConverter(responsesId('resp'), p.echo);
    return { events$: this.events(p, converter), errorEvent: (err) => converter.errorEvent(err) };
  }

  /** GET /v1/responses/{id} for principal `owner`. @throws ResponseNotFoundError (404, also another's id). */
  retrieve(owner: string, id: string): ResponseObject {
    const stored = this.store.get(owner, id);
    if (!stored) throw new ResponseNotFoundError(id);
    return stored.response;
  }

  /** DELETE /v1/responses/{id} for principal `owner`. @throws ResponseNotFoundError (404, also another's id). */
  delete(owner: string, id: string): ResponseDeleted {
    if (!this.store.delete(owner, id)) throw new ResponseNotFoundError(id);
    return { id, object: 'response', deleted: true };
  }

  /** Runs the chat and converts its events; the finished response is stored unless `store: false`. */
  private events(p: PreparedResponse, converter: ResponsesStreamConverter): Observable<ResponseStreamEvent> {
    return new Observable<ResponseStreamEvent>((subscriber) => {
      let saved = false;
      const emit = (events: ResponseStreamEvent[]) => {
        // Saved before the terminal event goes out, so a client that continues at once finds it.
        if (converter.response && !saved) {
          saved = true;
          if (p.echo.store) this.save(p, converter);
        }
        for (const e of events) subscriber.next(e);
      };
      return defer(() => this.adapt(p.command))
        .pipe(switchMap((cmd) => this.chat.chat(cmd)))
        .subscribe({
          next: (e) => emit(converter.process(e)),
          error: (err: unknown) => subscriber.error(err),
          complete: () => {
            emit(converter.finish());
            subscriber.complete();
          },
        });
    });
  }

  private save(p: PreparedResponse, converter: ResponsesStreamConverter): void {
    const response = converter.response!;
    this.store.save(p.owner, response.id, {
      response,
      conversation: [...p.prior, ...p.input, converter.assistantMessage()],
    });
  }

  /** Clears `think` when the model cannot think (only looked up when thinking was asked for). */
  private adapt(cmd: ChatCommand): Observable<ChatCommand> {
    if (cmd.think === undefined || cmd.think === false || !cmd.model) return of(cmd);
    return from(this.models.resolve(cmd.model)).pipe(
      map((model) => (model.capabilities.includes('thinking') ? cmd : { ...cmd, think: undefined })),
    );
  }
}
