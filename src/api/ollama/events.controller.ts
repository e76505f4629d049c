import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import { ApiHeader, ApiQuery } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { filter, map, Observable } from 'rxjs';
import { InvalidRequestError } from '../../common/errors';
import { writeStream } from '../../common/http';
import { ModelName, policyNames } from '../../models';
import { MODEL_EVENTS, ModelEvent, ModelEvents } from '../../observability';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { LlamadRoutes } from '../../security';
import { allowsModel, limitsModels } from '../../security/model-allow-list';
import { principalOf } from '../../security/request-authorization';
import { roleOf, TenantPolicy } from '../../security/tenant-policy';

/** How often an idle stream gets a `: keep-alive` comment, ms (proxies drop silent connections). */
export const EVENTS_KEEP_ALIVE_MS = 15_000;

/** Reconnection delay the stream asks EventSource clients for (the SSE `retry:` field), ms. */
export const EVENTS_RETRY_MS = 2_000;

/** Who reads a stream: what decides which events it gets. */
export interface EventsReader {
  principal: string;
  policy?: TenantPolicy;
}

/**
 * Whether `reader` may see `event` (docs/security.md "Model events"): the model must be one its policy lets it use
 * (the model allow-list of /api/ps and /api/tags; a runner named by its blob path only when it sees every model), and
 * an event of work a principal started (pull, push, create) goes only to that principal and to admins.
 */
export function maySee(reader: EventsReader, event: ModelEvent): boolean {
  if (event.principal !== undefined && event.principal !== reader.principal && roleOf(reader.policy) !== 'admin') {
    return false;
  }
  if (!limitsModels(reader.policy)) return true;
  const name = ModelName.parse(event.model);
  return name !== null && allowsModel(reader.policy, policyNames(name));
}

/** The SSE frame of one event: `id`, `event` and one line of JSON `{model, time, …fields}`. */
export function eventFrame(event: ModelEvent): string {
  const data = { model: event.model, time: new Date(event.at).toISOString(), ...event.data };
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The short name a `model=` filter compares against; 400 `invalid model name` for a malformed one. */
function modelFilter(query: unknown): string | undefined {
  const raw = (query as { model?: unknown } | undefined)?.model;
  if (raw === undefined || raw === '') return undefined;
  const name = typeof raw === 'string' ? ModelName.parse(raw) : null;
  if (!name) throw new InvalidRequestError('invalid model name', 'model');
  return name.toShortString().toLowerCase();
}

/** Whether an event's model is the `model=` filter's (short names, compared case-insensitively). */
function sameModel(model: string, only: string): boolean {
  return ModelName.parse(model)?.toShortString().toLowerCase() === only;
}

/**
 * GET /api/events (issue 36; beyond Ollama): a server-sent-event stream of model lifecycle events — load start,
 * progress, ready and failure, unload, pull and push progress, create steps (docs/observability.md "Model events").
 * Guarded like every route (Origin/Host gate, API key); each caller sees only what its principal may
 * ({@link maySee}). `Last-Event-ID` of this process replays the newer events still in the bus's ring. The stream
 * ends when the client goes away or the daemon shuts down (the drain ends the bus's streams).
 */
@LlamadRoutes()
@Controller('api')
export class EventsController {
  constructor(@Inject(MODEL_EVENTS) private readonly events: ModelEvents) {}

  /** Streams the caller's events. 400 `invalid model name` for a malformed `model=`. */
  @Get('events')
  @ApiRoute({
    id: 'streamModelEvents',
    summary: 'Model lifecycle events (beyond Ollama)',
    description:
      'Server-sent events: `load.start`, `load.progress`, `load.ready`, `load.failed`, `unload`, `pull.progress`, ' +
      '`push.progress`, `create.step`; each with `id: <epoch>-<seq>` for `Last-Event-ID`, and a `: keep-alive` ' +
      'comment every 15 s. A caller sees the events of the models it may use; pull, push and create events only ' +
      'when it started them or is an admin.',
    tag: ApiTag.Ollama,
    ok: { description: 'The event stream (never ends by itself).', sse: 'ModelEvent' },
    statuses: { 400: 'A malformed `model`.' },
  })
  @ApiQuery({
    name: 'model',
    required: false,
    description: 'Only the events of this model (`tiny`, `tiny:latest`, …).',
    schema: { type: 'string' },
  })
  @ApiHeader({
    name: 'Last-Event-ID',
    required: false,
    description: 'Replays the newer events still kept (at most 256, 60 s) when it is of this daemon process.',
  })
  async stream(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const only = modelFilter(request.query);
    const principal = principalOf(request);
    const reader: EventsReader = { principal: principal.id, ...(principal.policy ? { policy: principal.policy } : {}) };
    const header = request.headers['last-event-id'];
    const lastEventId = Array.isArray(header) ? header[0] : header;
    const events$ = this.events
      .stream(lastEventId)
      .pipe(filter((e) => (only === undefined || sameModel(e.model, only)) && maySee(reader, e)));
    const frames$ = new Observable<string>((subscriber) => {
      // The first frame sends the headers at once (EventSource opens on them) and sets the reconnection delay.
      subscriber.next(`retry: ${EVENTS_RETRY_MS}\n\n`);
      const keepAlive = setInterval(() => subscriber.next(': keep-alive\n\n'), EVENTS_KEEP_ALIVE_MS);
      const subscription = events$.pipe(map(eventFrame)).subscribe(subscriber);
      return () => {
        clearInterval(keepAlive);
        subscription.unsubscribe();
      };
    });
    await writeStream(reply, frames$, {
      contentType: 'text/event-stream',
      encode: (frame) => frame,
      encodeError: () => '',
    });
  }
}
