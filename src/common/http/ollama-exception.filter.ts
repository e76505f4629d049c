import { ArgumentsHost, Catch, ExceptionFilter, Logger, NotFoundException } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { DaemonError, ErrorCode, RateLimitedError } from '../errors';
import { toOllamaError } from './ollama-error.mapper';
import { refusalHeaders } from './rate-limit-headers';
import { endStartedResponse } from './stream-responder';

const METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

/**
 * Renders every error of the native API as Ollama does (reference/ollama-api.md §1.1, §5): `{"error": "..."}` with
 * the status from toOllamaError; an unknown route is gin's plain-text `404 page not found`, a known route with the
 * wrong method `405 method not allowed`. Registered globally (the native dialect is the default); the compat
 * dialects will bind their own filters on their controllers.
 */
@Catch()
export class OllamaExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HTTP');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const request = http.getRequest<FastifyRequest>();
    // Streaming already began: writeStream owns the error line.
    if (endStartedResponse(reply, exception, this.logger)) return;
    if (exception instanceof NotFoundException && this.isRouterNotFound(exception)) {
      const allowed = this.routeExistsForOtherMethod(request);
      void reply
        .status(allowed ? 405 : 404)
        .header('content-type', 'text/plain')
        .send(allowed ? '405 method not allowed' : '404 page not found');
      return;
    }
    const { status, message } = toOllamaError(exception);
    if (status >= 500) {
      const stack = exception instanceof Error ? exception.stack : undefined;
      this.logger.error(`${request.method} ${request.url} → ${status}: ${message}`, stack);
    } else if (!(exception instanceof DaemonError && exception.code === ErrorCode.CANCELLED)) {
      this.logger.debug(`${request.method} ${request.url} → ${status}: ${message}`);
    }
    // A 429: retry-after and the x-ratelimit-* set (beyond Ollama, which has no limits; docs/security.md).
    if (exception instanceof RateLimitedError) void reply.headers(refusalHeaders(exception, 'ollama'));
    void reply.status(status).header('content-type', 'application/json; charset=utf-8').send({ error: message });
  }

  /** Nest's own route-not-found handler throws `Cannot <METHOD> <path>`; services never throw Nest exceptions. */
  private isRouterNotFound(err: NotFoundException): boolean {
    return /^Cannot [A-Z]+ /.test(err.message);
  }

  /** gin's HandleMethodNotAllowed: is the path routed for another method? (static paths; §1.1) */
  private routeExistsForOtherMethod(request: FastifyRequest): boolean {
    const fastify = this.adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    if (!fastify) return false;
    const url = request.url.split('?')[0];
    return METHODS.some((method) => method !== request.method && fastify.hasRoute({ method, url }));
  }
}
