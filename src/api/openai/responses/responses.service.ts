import { Inject, Injectable, Logger } from '@nestjs/common';
import { concat, concatMap, defer, from, map, Observable, of, switchMap } from 'rxjs';
import { DaemonError, ErrorCode, ServerBusyError } from '../../../common/errors';
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

/**
 * A store that could not be read (Redis unreachable): 503 `responses store unavailable`, the request may be retried.
 * The cause is logged, never sent (it may name the store's address).
 */
export class ResponsesStoreUnavailableError extends ServerBusyError {
  constructor() {
    super('responses store unavailable');
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
 * every route) plus the ResponsesStore (RESPONSES_STORE: in memory, or in Redis with LLAMAD_REDIS_URL) for `store`, `previous_response_id`, retrieve and delete (beyond
 * Ollama, which is stateless). `reasoning.effort` for a model without the thinking capability is dropped silently
 * (as the Anthropic layer does) instead of the native 400, since agent clients send it by default.
 */
@Injectable()
export class ResponsesService {
  private readonly logger = new Logger('Responses');
  /** Whether the last store operation failed (one warning per outage, not one per request). */
  private storeDown = false;

  constructor(
    private readonly chat: ChatService,
    private readonly models: ModelsService,
    @Inject(RESPONSES_STORE) private readonly store: ResponsesStore,
  ) {}

  /**
   * Decodes a request body, prepending the stored conversation of `previous_response_id`.
   * @param owner the caller's principal id: only its own responses can be continued, and the result is stored for it.
   * @throws InvalidRequestError (400) for a malformed body; ResponseNotFoundError (404) for an unknown
   *   previous_response_id (also one created with `store: false`, expired, or another principal's);
   *   ResponsesStoreUnavailableError (503) when the store cannot be read.
   */
  async prepare(body: unknown, startedAt: bigint, owner: string): Promise<PreparedResponse> {
    const previousId = previousResponseIdOf(body);
    let prior: PreparedResponse['prior'] = [];
    if (previousId !== undefined) {
      const stored = await this.lookup(owner, previousId);
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

  /**
   * GET /v1/responses/{id} for principal `owner`.
   * @throws ResponseNotFoundError (404, also another's id); ResponsesStoreUnavailableError (503).
   */
  async retrieve(owner: string, id: string): Promise<ResponseObject> {
    const stored = await this.lookup(owner, id);
    if (!stored) throw new ResponseNotFoundError(id);
    return stored.response;
  }

  /**
   * DELETE /v1/responses/{id} for principal `owner`.
   * @throws ResponseNotFoundError (404, also another's id); ResponsesStoreUnavailableError (503).
   */
  async delete(owner: string, id: string): Promise<ResponseDeleted> {
    let deleted: boolean;
    try {
      deleted = await this.store.delete(owner, id);
    } catch (err) {
      throw this.unavailable(err);
    }
    if (!deleted) throw new ResponseNotFoundError(id);
    return { id, object: 'response', deleted: true };
  }

  private async lookup(owner: string, id: string) {
    try {
      const stored = await this.store.get(owner, id);
      this.storeDown = false;
      return stored;
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  private unavailable(err: unknown): ResponsesStoreUnavailableError {
    if (!this.storeDown) {
      this.logger.warn(`responses store unavailable: ${err instanceof Error ? err.message : String(err)}`);
    }
    this.storeDown = true;
    return new ResponsesStoreUnavailableError();
  }

  /**
   * Runs the chat and converts its events; the finished response is stored unless `store: false`, before the events
   * that carry it go out (so a client that continues at once finds it). A failed save is logged, not the request's
   * failure: the answer still goes out (continuing it then answers 404).
   */
  private events(p: PreparedResponse, converter: ResponsesStreamConverter): Observable<ResponseStreamEvent> {
    return defer(() => {
      let saved = false;
      const emit = (events: ResponseStreamEvent[]): Observable<ResponseStreamEvent> => {
        if (!converter.response || saved) return from(events);
        saved = true;
        if (!p.echo.store) return from(events);
        return from(this.save(p, converter)).pipe(concatMap(() => from(events)));
      };
      const chat$ = defer(() => this.adapt(p.command)).pipe(switchMap((cmd) => this.chat.chat(cmd)));
      return concat(
        chat$.pipe(concatMap((e) => emit(converter.process(e)))),
        defer(() => emit(converter.finish())),
      );
    });
  }

  private async save(p: PreparedResponse, converter: ResponsesStreamConverter): Promise<void> {
    const response = converter.response!;
    try {
      await this.store.save(p.owner, response.id, {
        response,
        conversation: [...p.prior, ...p.input, converter.assistantMessage()],
      });
    } catch (err) {
      this.logger.warn(`response ${response.id} not stored: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** Clears `think` when the model cannot think (only looked up when thinking was asked for). */
  private adapt(cmd: ChatCommand): Observable<ChatCommand> {
    if (cmd.think === undefined || cmd.think === false || !cmd.model) return of(cmd);
    return from(this.models.resolve(cmd.model)).pipe(
      map((model) => (model.capabilities.includes('thinking') ? cmd : { ...cmd, think: undefined })),
    );
  }
}
