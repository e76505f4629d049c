import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Context as TraceContext } from '@opentelemetry/api';
import type { TenantPolicy } from '../security/tenant-policy';

/** Header that carries the request id, in both directions (kept when a client sends one, generated otherwise). */
export const REQUEST_ID_HEADER = 'x-request-id';

/** The route label of requests that matched no route (404s): raw URLs would make label values unbounded. */
export const UNMATCHED_ROUTE = 'unmatched';

/** Longest client-sent request id that is kept, characters; longer ones (or odd characters) are replaced. */
export const MAX_REQUEST_ID_LENGTH = 200;

/** Whether `value` is 1.. characters of visible ASCII (0x21-0x7e): a request id is echoed in a header and logged. */
function isVisibleAscii(value: string): boolean {
  if (value.length === 0) return false;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x21 || code > 0x7e) return false;
  }
  return true;
}

/**
 * The request id for an incoming `x-request-id` value: the client's when it is 1..{@link MAX_REQUEST_ID_LENGTH}
 * visible ASCII characters (repeated headers: the first), else a new random UUID. The length is checked before any
 * character is looked at; no regular expression.
 */
export function requestIdFrom(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  if (value !== undefined && value.length <= MAX_REQUEST_ID_LENGTH && isVisibleAscii(value)) return value;
  return randomUUID();
}

/** What one request's generations added up to (for its log line). Token counts are summed over its generations. */
export interface RequestGenerationSummary {
  /** The model of the last generation (its short name, e.g. `tiny:latest`). */
  model: string;
  /** Generations (generate/chat/embed runs) the request made. */
  generations: number;
  /** Prompt tokens, reused from the KV cache or evaluated. */
  promptTokens: number;
  /** Of those, tokens reused from the KV cache. */
  cachedTokens: number;
  /** Tokens generated. */
  completionTokens: number;
  /** Time to the first generated token of the first generation, ms since the handler started. */
  timeToFirstTokenMs?: number;
  /** The last generation's done reason (`stop`, `length`), when it finished. */
  doneReason?: string;
  /** The last generation's error message (`cancelled` when the client left). */
  error?: string;
}

/**
 * Per-request state shared by the HTTP layer and the services behind it (without threading it through every call):
 * created by the HTTP observation hook for each request, made current for the handler through
 * {@link requestContextStorage}, read by the generation hooks (request id, token counts) and by the request's log
 * line. Plain data; one object per request, none per token.
 */
export class RequestContext {
  /** What the request's generations added up to; undefined when it ran none. */
  generation?: RequestGenerationSummary;
  /**
   * Who sent the request, as the authorizer named it (`key:<12 hex>`, `anonymous`, a host's tenant id); set by the
   * authorization hook, undefined before it ran and on public routes. Never a key.
   */
  principal?: string;
  /**
   * The name usage is reported under (the policy's name, a host's tenant name, else the principal id); set with
   * `principal`.
   */
  principalName?: string;
  /** The principal's policy (security/tenant-policy.ts), set with `principal`; undefined = unlimited admin. */
  policy?: TenantPolicy;
  /**
   * Why the request was refused by its principal's policy, for the usage counters: the limit's field name
   * (`requests_per_minute`, `tokens_per_minute`, `tokens_per_day`, `concurrent_requests`) or `forbidden`.
   * Undefined when it was not refused.
   */
  refusal?: string;
  /**
   * The OpenTelemetry context of the request's HTTP server span (set by the tracing hooks when tracing is on,
   * observability/tracing/fastify-tracing.ts): the parent of its generation spans. Undefined when tracing is off.
   */
  trace?: TraceContext;
  /**
   * Whether the request asked for a streamed reply (its body's `stream`, else the dialect's default: true on `/api/`,
   * false on the compatibility routes); set by the tracing hooks only (`gen_ai.request.stream`).
   */
  stream?: boolean;

  /**
   * @param id the request id (see {@link requestIdFrom}).
   * @param method the HTTP method.
   * @param route the Fastify route pattern that matched (`/api/chat`), or {@link UNMATCHED_ROUTE}.
   */
  constructor(
    readonly id: string,
    readonly method: string,
    readonly route: string,
  ) {}

  /** Adds one finished (or failed, or cancelled) generation to the summary. */
  addGeneration(info: Omit<RequestGenerationSummary, 'generations'>): void {
    const g = (this.generation ??= {
      model: info.model,
      generations: 0,
      promptTokens: 0,
      cachedTokens: 0,
      completionTokens: 0,
    });
    g.model = info.model;
    g.generations++;
    g.promptTokens += info.promptTokens;
    g.cachedTokens += info.cachedTokens;
    g.completionTokens += info.completionTokens;
    g.timeToFirstTokenMs ??= info.timeToFirstTokenMs;
    g.doneReason = info.doneReason;
    g.error = info.error;
  }
}

/**
 * The current request's {@link RequestContext}: entered by the HTTP observation hook around each handler (so
 * services called from it, and the promises and observables they start, see it); empty outside a request. One per
 * process, shared by every app in it (each request has its own context object).
 */
export const requestContextStorage = new AsyncLocalStorage<RequestContext>();

/** The current request's context, or undefined outside an HTTP request (e.g. a host application's own call). */
export function currentRequestContext(): RequestContext | undefined {
  return requestContextStorage.getStore();
}
