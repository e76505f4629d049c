import type { ExceptionFilter, Type } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { ForbiddenError, RateLimitedError } from '../common/errors';
import { toOllamaError } from '../common/http/ollama-error.mapper';
import { refusalHeaders } from '../common/http/rate-limit-headers';
import { contextOf } from '../observability/http-observation';
import { isAdmin } from './admin-only';
import { ANONYMOUS, Principal, RequestAuthorizer } from './authorizer';
import { routeMarks } from './route-marks';
import type { TenantPolicySource } from './tenant-policy-source';
import { answerWithoutReadingBody } from './unread-body';

const PRINCIPAL = Symbol('llamad.principal');

/** Requests already authorized, by the `onRequest` hook or the guard (each runs the authorizer once per request). */
const authorizedRequests = new WeakSet<object>();

/**
 * The principal the authorizer established for a request (its raw `IncomingMessage` or the FastifyRequest);
 * {@link ANONYMOUS} for public routes, routes outside the module and requests that were never authorized.
 */
export function principalOf(request: IncomingMessage | FastifyRequest): Principal {
  const raw = 'raw' in request ? request.raw : request;
  return (raw as IncomingMessage & { [PRINCIPAL]?: Principal })[PRINCIPAL] ?? ANONYMOUS;
}

/** Whether the request was authorized already (the guard then does not ask again). */
export function isAuthorized(request: FastifyRequest): boolean {
  return authorizedRequests.has(request);
}

/**
 * Asks the authorizer about a request (no body: it has not been read), then the policy source about its principal
 * (once), and records the result: the principal, with the policy the source returned, rides on the raw request
 * ({@link principalOf}) and on its RequestContext (`principal`, `principalName`, `policy`: for logs, services and
 * the limits). On a route marked `@AdminOnly()` a principal whose role is `user` is then refused.
 * @param policies the TENANT_POLICY_SOURCE; absent = the principal's own `policy`.
 * @throws whatever the authorizer or the policy source throws (UnauthorizedError: 401); ForbiddenError (403, with
 *   the context's `refusal` set to `forbidden`) for a `user` on an admin-only route.
 */
export async function authorizeRequest(
  authorizer: RequestAuthorizer,
  request: FastifyRequest,
  policies?: TenantPolicySource,
): Promise<Principal> {
  const authorized =
    (await authorizer.authorize({
      method: request.method,
      route: request.routeOptions.url ?? request.url.split('?')[0],
      headers: request.headers,
      remoteAddress: request.socket.remoteAddress,
    })) ?? ANONYMOUS;
  const policy = policies ? await policies.policyFor(authorized) : authorized.policy;
  const principal: Principal = policy === authorized.policy ? authorized : { ...authorized, policy };
  (request.raw as IncomingMessage & { [PRINCIPAL]?: Principal })[PRINCIPAL] = principal;
  const context = contextOf(request.raw);
  if (context) {
    context.principal = principal.id;
    context.principalName = principal.name ?? principal.policy?.name ?? principal.id;
    context.policy = principal.policy;
  }
  if (routeMarks(request).llamadAdminOnly === true && !isAdmin(principal.policy)) {
    if (context) context.refusal = 'forbidden';
    throw new ForbiddenError();
  }
  authorizedRequests.add(request);
  return principal;
}

/**
 * Whether a matched route is marked `@Public()` (its Fastify route config; the guard reads the same decorator's Nest
 * metadata: one mark, two readers).
 */
export function isPublicRoute(request: FastifyRequest): boolean {
  return routeMarks(request).llamadPublic === true;
}

/** Options of {@link installRequestAuthorization}. */
export interface RequestAuthorizationOptions {
  /** Asked once per non-public request. */
  authorizer: RequestAuthorizer;
  /** Asked once per authorized request, right after the authorizer (TENANT_POLICY_SOURCE); absent = the principal's. */
  policies?: TenantPolicySource;
  /**
   * Which requests the hook judges (default: every routed one). The library passes "is this one of the module's
   * routes", so a host application's own routes are left to the host.
   */
  applies?: (request: FastifyRequest) => boolean;
  /** Sends the authorizer's error in the route's dialect (Ollama, OpenAI, Anthropic). */
  render: (err: unknown, request: FastifyRequest, reply: FastifyReply) => void;
  /**
   * Runs right after the authorizer accepted the request, still before its body is read: the tenant limits'
   * admission (src/security/limits/request-admission.ts). Its error is rendered like the authorizer's (a 429).
   */
  admit?: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
}

/**
 * Installs authorization as a Fastify `onRequest` hook (docs/security.md "Order of checks"): it runs after the
 * Origin/Host gate and before the content-type parser, so a client without a valid key gets its 401 before any byte
 * of its body is read or parsed (the connection is then closed, since the unread body cannot be skipped cheaply;
 * see answerWithoutReadingBody).
 * Skipped for OPTIONS (preflights are the gate's), routes that matched nothing (404 stays 404), `@Public()` routes
 * and requests `applies` rejects. An accepted request then goes through `admit` (rate limits), with the same early
 * answer on refusal. The AuthorizationGuard stays bound to the controllers as a backstop; a request
 * authorized here is not asked again.
 */
export function installRequestAuthorization(fastify: FastifyInstance, options: RequestAuthorizationOptions): void {
  fastify.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method === 'OPTIONS' || request.routeOptions.url === undefined) return;
    if (isPublicRoute(request) || authorizedRequests.has(request)) return;
    if (options.applies && !options.applies(request)) return;
    try {
      await authorizeRequest(options.authorizer, request, options.policies);
      if (options.admit) await options.admit(request, reply);
    } catch (err) {
      answerWithoutReadingBody(request, reply);
      options.render(err, request, reply);
      return reply;
    }
  });
}

/**
 * A renderer for {@link RequestAuthorizationOptions.render}: the error goes through the exception filter of the
 * route's controller (the dialect `@LlamadRoutes(filter)` names: Ollama, OpenAI or Anthropic), exactly as if the
 * handler had thrown it; a route without one gets Ollama's `{"error": "…"}` (a 429 with its refusalHeaders).
 * @param adapterHost passed to filters that take it (OllamaExceptionFilter, for its 404/405 logic).
 */
export function renderWithRouteFilter(
  adapterHost: HttpAdapterHost,
): (err: unknown, request: FastifyRequest, reply: FastifyReply) => void {
  const filters = new Map<Type<ExceptionFilter>, ExceptionFilter>();
  return (err, request, reply) => {
    const filterClass = routeMarks(request).llamadFilter;
    if (!filterClass) {
      const { status, message } = toOllamaError(err);
      if (err instanceof RateLimitedError) void reply.headers(refusalHeaders(err, 'ollama'));
      void reply.code(status).type('application/json; charset=utf-8').send({ error: message });
      return;
    }
    let filter = filters.get(filterClass);
    if (!filter) {
      filter = new (filterClass as unknown as new (host: HttpAdapterHost) => ExceptionFilter)(adapterHost);
      filters.set(filterClass, filter);
    }
    filter.catch(err, new ExecutionContextHost([request, reply]));
  };
}
