import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { runWithClientGone } from '../common/http/client-gone';
import {
  REQUEST_ID_HEADER,
  RequestContext,
  requestContextStorage,
  requestIdFrom,
  UNMATCHED_ROUTE,
} from './request-context';

/** Receives one finished request (the metrics' HTTP counter and histogram). */
export interface HttpRequestSink {
  /**
   * @param route the Fastify route pattern (`/api/chat`) or `unmatched`.
   * @param status the response status; 499 when the client closed the connection before the response ended.
   * @param seconds request start (first hook) → response end or connection close.
   * @param context the request's context (principal, generation summary, refusal), for the usage counters.
   */
  observeHttp(method: string, route: string, status: number, seconds: number, context?: RequestContext): void;
}

/** pino-http's middleware shape: attaches its listeners to the request and response (one log line at the end). */
export type HttpRequestLogger = (req: IncomingMessage, res: ServerResponse) => void;

/** Body of the 503 answered to requests that arrive while the daemon drains for shutdown. */
export const SHUTTING_DOWN_MESSAGE = 'server is shutting down';

const CONTEXT = Symbol('llamad.requestContext');

/** The {@link RequestContext} the observation hook attached to a raw request, if any. */
export function contextOf(req: IncomingMessage): RequestContext | undefined {
  return (req as IncomingMessage & { [CONTEXT]?: RequestContext })[CONTEXT];
}

/**
 * The HTTP side of observability for one Fastify instance, shared by its hooks and the application's services: the
 * requests in flight (for graceful shutdown), the draining switch, where finished requests are reported (metrics)
 * and the per-request logger.
 */
export class HttpObservation {
  /** Requests whose response has not ended (nor their connection closed). */
  inFlight = 0;
  /** Set by graceful shutdown: new requests are answered 503 `server is shutting down` with `Connection: close`. */
  draining = false;
  /** Where finished requests are counted (set by the metrics service). */
  sink?: HttpRequestSink;
  /** Writes each request's log line (set by the application's logging; none in a host application). */
  logger?: HttpRequestLogger;
  private idleWaiters: Array<() => void> = [];

  /** Resolves once no request is in flight (at once when none is). */
  whenIdle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** A request started. */
  started(): void {
    this.inFlight++;
  }

  /** A request ended. */
  ended(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    if (this.inFlight > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

const observations = new WeakMap<FastifyInstance, HttpObservation>();

/**
 * The one id of a request: the one Fastify assigned (`request.id`, from the application's `genReqId` — the daemon's
 * honours a sane incoming `x-request-id`, see {@link fastifyRequestIdOptions}; a host's is its own), else (an id that
 * is not a non-empty string) the incoming `x-request-id` when sane, else a new UUID.
 */
function requestIdOf(request: FastifyRequest): string {
  const assigned: unknown = request.id;
  if (typeof assigned === 'string' && assigned !== '') return assigned;
  return requestIdFrom(request.headers[REQUEST_ID_HEADER]);
}

/**
 * Fastify options that make `request.id` the daemon's request id: the client's `x-request-id` when it is sane
 * (request-context.ts requestIdFrom), else a new UUID. Fastify then logs, and llamad echoes, logs and reports, that
 * one id.
 */
export function fastifyRequestIdOptions(): { genReqId: (req: IncomingMessage) => string } {
  return { genReqId: (req) => requestIdFrom(req.headers[REQUEST_ID_HEADER]) };
}

/** The observation installed on this Fastify instance, if any. */
export function observationOf(fastify: FastifyInstance): HttpObservation | undefined {
  return observations.get(fastify);
}

/**
 * Installs the HTTP observation hooks on a Fastify instance (once; later calls return the same state):
 * - `onRequest`: takes the request's one id (Fastify's `request.id`, see {@link requestIdOf}) and echoes it in
 *   `x-request-id` on the response; creates the request's {@link RequestContext} (id, method, route pattern); counts the request in flight
 *   until its response ends or its connection closes, then reports it to the sink (method, route pattern, status,
 *   seconds); starts its log line; while draining, answers 503 with `Connection: close`.
 * - `preHandler`: runs the handler inside the request context (AsyncLocalStorage), so services, the generation
 *   hooks and log lines written meanwhile know the request id, and with the request's client-gone check
 *   (`currentClientGone()`: its socket closed before the response finished; src/common/http/client-gone.ts).
 * Per request: one context object and one close listener; nothing per streamed chunk. Install it before the request
 * gate (src/app.factory.ts) so refused requests are counted and logged as well; routes added later are covered.
 * `only` limits all of it to the requests it accepts (a host application: llamad's own routes; the host's routes get
 * no header, no context, no count, no log line and no 503 from llamad); absent, every request.
 */
export function installHttpObservation(
  fastify: FastifyInstance,
  options: { logger?: HttpRequestLogger; only?: (request: FastifyRequest) => boolean } = {},
): HttpObservation {
  const existing = observations.get(fastify);
  if (existing) {
    if (options.logger) existing.logger = options.logger;
    return existing;
  }
  const state = new HttpObservation();
  state.logger = options.logger;
  observations.set(fastify, state);

  const only = options.only;
  fastify.addHook('onRequest', (request, reply, done) => {
    if (only && !only(request)) {
      done();
      return;
    }
    const raw = reply.raw;
    const id = requestIdOf(request);
    raw.setHeader(REQUEST_ID_HEADER, id);
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const context = new RequestContext(id, request.method, route);
    const req = request.raw as IncomingMessage & { [CONTEXT]?: RequestContext; id?: string };
    req[CONTEXT] = context;
    req.id = id;
    const started = performance.now();
    state.started();
    raw.once('close', () => {
      state.ended();
      const status = raw.writableFinished ? raw.statusCode : 499;
      state.sink?.observeHttp(request.method, route, status, (performance.now() - started) / 1000, context);
    });
    state.logger?.(req, raw);
    if (state.draining) {
      void reply
        .code(503)
        .header('connection', 'close')
        .header('content-type', 'application/json; charset=utf-8')
        .send(JSON.stringify({ error: SHUTTING_DOWN_MESSAGE }));
      return;
    }
    done();
  });

  fastify.addHook('preHandler', (request, reply, done) => {
    const context = contextOf(request.raw);
    // The handler chain may ask whether its client left (the validation pipe, between slices of a large body).
    const gone = () => request.raw.socket?.destroyed === true && !reply.raw.writableFinished;
    if (context) requestContextStorage.run(context, () => runWithClientGone(gone, done));
    else runWithClientGone(gone, done);
  });
  return state;
}
