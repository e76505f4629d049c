import { FASTIFY_ROUTE_CONFIG_METADATA } from '@nestjs/platform-fastify/constants';
import type { ExceptionFilter, Type } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { RateLimitDialect } from '../common/http/rate-limit-headers';

/**
 * Marks that llamad's decorators put in a route's Fastify config (`routeOptions.config`), so that `onRequest` hooks,
 * which run before Nest knows the handler, can tell a module route, its dialect and whether it is public.
 */
export interface LlamadRouteMarks {
  /** A route of LlamadModule's controllers (`@LlamadRoutes()`). */
  llamadRoute?: boolean;
  /** The dialect's exception filter of the controller (renders errors raised before the handler). */
  llamadFilter?: Type<ExceptionFilter>;
  /** `@Public()`: open without authorization. */
  llamadPublic?: boolean;
  /**
   * `@Metered(dialect)`: a tenant-facing inference route, counted against its principal's rate limits and answered
   * with the dialect's rate-limit headers (docs/security.md "Rate limits and quotas").
   */
  llamadMetered?: RateLimitDialect;
  /** `@AdminOnly()`: a principal whose role is `user` gets 403 (before the body is read). */
  llamadAdminOnly?: boolean;
}

/** Merges `marks` into the Fastify route config of one handler (kept with whatever config it has). */
function markHandler(handler: object, marks: LlamadRouteMarks): void {
  const config = (Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, handler) as object | undefined) ?? {};
  Reflect.defineMetadata(FASTIFY_ROUTE_CONFIG_METADATA, { ...config, ...marks }, handler);
}

/**
 * Adds `marks` to the Fastify route config of a handler (method decorator) or of every method of a controller
 * (class decorator; class decorators run after the methods' own, so every route method is there).
 */
export function markRoutes(marks: LlamadRouteMarks, target: object, descriptor?: PropertyDescriptor): void {
  if (descriptor !== undefined) {
    markHandler(descriptor.value as object, marks);
    return;
  }
  const prototype = (target as { prototype: object }).prototype;
  for (const name of Object.getOwnPropertyNames(prototype)) {
    const method = Object.getOwnPropertyDescriptor(prototype, name)?.value as unknown;
    if (name !== 'constructor' && typeof method === 'function') markHandler(method, marks);
  }
}

/** The marks of the route a request matched ({} for none, or a route outside the module). */
export function routeMarks(request: FastifyRequest): LlamadRouteMarks {
  return (request.routeOptions.config as unknown as LlamadRouteMarks | undefined) ?? {};
}

/**
 * Marks a handler (or every handler of a controller) as a tenant-facing inference route (issue 33): admission checks
 * its principal's `requests_per_minute` and `concurrent_requests` before the body is read, and its responses carry
 * the rate-limit headers of `dialect` (`x-ratelimit-*` for `openai` and `ollama`, `anthropic-ratelimit-*` for
 * `anthropic`; src/common/http/rate-limit-headers.ts). Principals without limits are not counted at all.
 */
export const Metered = (dialect: RateLimitDialect): MethodDecorator & ClassDecorator =>
  ((target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    markRoutes({ llamadMetered: dialect }, target, descriptor);
    return descriptor;
  }) as MethodDecorator & ClassDecorator;
