import type { LoggerService } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Logger as NestPinoLogger, PinoLogger } from 'nestjs-pino';
import pino from 'pino';
import { pinoHttp, type HttpLogger } from 'pino-http';
import pinoPretty from 'pino-pretty';
import type { LogLevelName } from '../config';
import { contextOf } from './http-observation';
import { currentRequestContext } from './request-context';

/** How the daemon logs (built from DaemonConfig by the application; the library itself never logs through pino). */
export interface LoggingOptions {
  /** pino level; `silent` drops every line. */
  level: LogLevelName;
  /** Human-readable lines (pino-pretty) instead of JSON: for a terminal. Ignored when `destination` is given. */
  pretty?: boolean;
  /** Where JSON lines go (default: process.stdout, whose write errors main.ts ignores). Tests pass a capture stream. */
  destination?: pino.DestinationStream;
}

/**
 * Header values never logged (at any level): credentials. Paths as pino's `redact` reads them, for the request
 * headers that the debug-level request line carries.
 */
export const REDACTED_PATHS: readonly string[] = [
  'headers.authorization',
  'headers["x-api-key"]',
  'headers["proxy-authorization"]',
  'headers.cookie',
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["proxy-authorization"]',
  'req.headers.cookie',
];

/**
 * The root pino logger: JSON lines (ISO time, numeric level, pid, hostname, msg) or pretty ones, credentials redacted,
 * and the current request's id (`reqId`) added to every line written while a request is handled.
 */
export function createRootLogger(options: LoggingOptions): pino.Logger {
  const pinoOptions: pino.LoggerOptions = {
    level: options.level,
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: [...REDACTED_PATHS], censor: '[redacted]' },
    mixin: () => {
      const context = currentRequestContext();
      return context ? { reqId: context.id } : {};
    },
  };
  if (options.destination) return pino(pinoOptions, options.destination);
  if (options.pretty) {
    return pino(
      pinoOptions,
      pinoPretty({ colorize: true, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }),
    );
  }
  return pino(pinoOptions, process.stdout);
}

/**
 * Routes whose path names a stored object a client can fetch by that name (`/v1/responses/{id}`): their log line
 * shows the route pattern, not the id (an id in a log is a capability for whoever reads the log).
 */
const OBJECT_ID_ROUTE = /\/responses\/:[^/]+$/;

/** The path of a request as logged: no query string; the route pattern instead for {@link OBJECT_ID_ROUTE}. */
function loggedPath(url: string, route: string | undefined): string {
  return route !== undefined && OBJECT_ID_ROUTE.test(route) ? route : url.split('?')[0];
}

/**
 * The fields of one request's log line (beyond pino's own): request id, method, path (no query string; no stored
 * object id), the principal (`key:<12 hex>`, `anonymous`; never a key) and the name its usage is reported under
 * (`principalName`: the policy's or host tenant's name, when it differs), the limit that refused it (`refusal`), Fastify
 * route pattern (`unmatched` for 404s), status (499 when the client left first), duration in ms and, when the request
 * ran a generation, the model and token counts (`promptTokens`, `cachedTokens`, `completionTokens`). At debug level the request headers too, credentials redacted.
 * Prompts and outputs are never logged.
 */
export function requestLogFields(
  req: IncomingMessage,
  res: ServerResponse,
  durationMs: number,
  withHeaders: boolean,
): Record<string, unknown> {
  const context = contextOf(req);
  const finished = res.writableFinished;
  const fields: Record<string, unknown> = {
    reqId: context?.id,
    method: req.method,
    url: loggedPath(req.url ?? '', context?.route),
    route: context?.route,
    status: finished ? res.statusCode : 499,
    durationMs,
  };
  if (context?.principal !== undefined) fields.principal = context.principal;
  if (context?.principalName !== undefined && context.principalName !== context.principal) {
    fields.principalName = context.principalName;
  }
  if (context?.refusal !== undefined) fields.refusal = context.refusal;
  if (!finished) fields.aborted = true;
  const g = context?.generation;
  if (g) {
    fields.model = g.model;
    fields.promptTokens = g.promptTokens;
    fields.cachedTokens = g.cachedTokens;
    fields.completionTokens = g.completionTokens;
    if (g.generations > 1) fields.generations = g.generations;
    if (g.timeToFirstTokenMs !== undefined) fields.ttftMs = Math.round(g.timeToFirstTokenMs * 10) / 10;
    if (g.doneReason) fields.doneReason = g.doneReason;
    if (g.error) fields.error = g.error;
  }
  if (withHeaders) fields.headers = { ...req.headers };
  return fields;
}

/**
 * pino-http over the root logger: exactly one line per request when its response ends or its connection closes
 * (`request completed`, level info; warn for 4xx, error for 5xx), with {@link requestLogFields}. Called by the HTTP
 * observation hook for every request (before the request gate, so refused requests are logged too).
 */
export function createHttpLogger(root: pino.Logger): HttpLogger {
  const withHeaders = () => root.isLevelEnabled('debug');
  return pinoHttp({
    logger: root,
    quietReqLogger: false,
    quietResLogger: true,
    // pino-http binds the request to a child logger for `req.log` on every request; keep that cheap (no headers
    // serialized) — the line itself is built by requestLogFields.
    wrapSerializers: false,
    serializers: { req: (req: { id?: unknown }) => ({ id: req.id }) },
    customLogLevel: (_req, res, err) => {
      if (err || res.statusCode >= 500) return 'error';
      return res.statusCode >= 400 ? 'warn' : 'info';
    },
    customSuccessMessage: () => 'request completed',
    customErrorMessage: () => 'request failed',
    customSuccessObject: (req, res, value: { responseTime?: number }) =>
      requestLogFields(req, res, value.responseTime ?? 0, withHeaders()),
    customErrorObject: (req, res, err, value: { responseTime?: number }) => ({
      ...requestLogFields(req, res, value.responseTime ?? 0, withHeaders()),
      ...(err instanceof Error && !/^failed with status code/.test(err.message) ? { err: err.message } : {}),
    }),
  });
}

/** nestjs-pino's PinoLogger bound to one root logger (not the module-wide logger nestjs-pino keeps for the process). */
class RootPinoLogger extends PinoLogger {
  constructor(private readonly root: pino.Logger) {
    super({ pinoHttp: { logger: root } });
  }

  override get logger(): pino.Logger {
    return this.root;
  }
}

/**
 * Nest's logger over the root pino logger (nestjs-pino's Logger): `app.useLogger()` with it sends every
 * `new Logger(ctx).log()` of the daemon through pino, with `context` and, inside a request, `reqId`.
 */
export function createNestLogger(root: pino.Logger): LoggerService {
  return new NestPinoLogger(new RootPinoLogger(root), {});
}
