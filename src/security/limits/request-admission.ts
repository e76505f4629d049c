import { Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { RateLimitState } from '../../common/errors';
import { RateLimitDialect, rateLimitHeaders } from '../../common/http/rate-limit-headers';
import { contextOf } from '../../observability/http-observation';
import { currentRequestContext, RequestContext } from '../../observability/request-context';
import { principalOf } from '../request-authorization';
import { routeMarks } from '../route-marks';
import { TenantLimiter } from './tenant-limiter';
import type { TokenBudget, TokenMeter } from './token-budget';

/** What admission recorded about a metered request, for its token reservation later. */
interface AdmittedRequest {
  dialect: RateLimitDialect;
  raw: ServerResponse;
  state: RateLimitState;
}

/** Metered requests that were admitted, by their RequestContext (gone with it). */
const admitted = new WeakMap<RequestContext, AdmittedRequest>();

/**
 * Sets the dialect's rate-limit headers on the raw response while its head is not written yet: both Fastify's
 * replies and the hijacked streams (writeStream's `writeHead` merges headers set with `setHeader`) carry them.
 */
function setRateLimitHeaders(raw: ServerResponse, dialect: RateLimitDialect, state: RateLimitState): void {
  if (raw.headersSent) return;
  for (const [name, value] of Object.entries(rateLimitHeaders(dialect, state))) raw.setHeader(name, value);
}

/**
 * Admission, part 1 (issue 33 item 2; docs/security.md "Rate limits and quotas"): run by the `onRequest`
 * authorization hook right after the authorizer named the principal, before any byte of the body is read. For a
 * `@Metered` route whose principal's policy sets limits: counts the request against `requests_per_minute` and
 * `concurrent_requests` (the slot is given back when the response ends or the connection closes), sets the
 * request-window headers of the route's dialect on the response, and records the request for its token reservation.
 * Anything else (unmetered routes, principals without limits) costs one route-mark lookup.
 * @throws RateLimitedError (429, rendered by the route's filter like a 401) with `refusal` set on the context.
 */
export async function admitRequest(
  limiter: TenantLimiter,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const dialect = routeMarks(request).llamadMetered;
  if (!dialect) return;
  const context = contextOf(request.raw);
  const principal = principalOf(request);
  const limits = (context?.policy ?? principal.policy)?.limits;
  if (!limits || !TenantLimiter.counts(limits)) return;
  const admission = await limiter.admit(principal.id, limits, context);
  reply.raw.once('close', admission.release);
  setRateLimitHeaders(reply.raw, dialect, admission.state);
  if (context) admitted.set(context, { dialect, raw: reply.raw, state: admission.state });
}

/**
 * The default {@link TokenBudget} (TOKEN_BUDGET): meters the current request by its RequestContext (principal id and
 * policy, set by the authorization hook) with the {@link TenantLimiter}. A successful reservation adds the token
 * window's headers to the response when its head is not written yet (streams write it with their first event, after
 * the reservation); a refusal carries the request window of admission too.
 */
@Injectable()
export class RequestTokenBudget implements TokenBudget {
  constructor(private readonly limiter: TenantLimiter) {}

  forCurrentRequest(): TokenMeter | undefined {
    const context = currentRequestContext();
    const limits = context?.policy?.limits;
    const principal = context?.principal;
    if (!context || principal === undefined || !limits) return undefined;
    if (limits.tokens_per_minute === undefined && limits.tokens_per_day === undefined) return undefined;
    const limiter = this.limiter;
    return {
      async reserve(tokens: number) {
        const record = admitted.get(context);
        const reservation = await limiter.reserve(principal, limits, tokens, context, record?.state ?? {});
        if (reservation && record) {
          setRateLimitHeaders(record.raw, record.dialect, { tokens: reservation.state.tokens });
        }
        return reservation;
      },
      charge(tokens: number) {
        void limiter.charge(principal, limits, tokens);
      },
    };
  }
}
