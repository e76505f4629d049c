import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DaemonError, ErrorCode, RateLimitedError } from '../../common/errors';
import { endStartedResponse, refusalHeaders, toOllamaError } from '../../common/http';
import { OpenAIErrorBody } from './openai.types';

/** An error as the OpenAI dialect renders it: status, body, and whether the client should retry. */
export interface OpenAIErrorRendering {
  status: number;
  body: OpenAIErrorBody;
  /** false for deterministic 5xx (load failures, internal errors): the SDKs would otherwise send it 3 times. */
  shouldRetry?: boolean;
}

/** OpenAI error `type` of a status (reference/ollama-api.md §5.3). */
export function openAIErrorType(status: number): string {
  if (status === 400 || status === 401) return 'invalid_request_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  return 'api_error';
}

/**
 * OpenAI `error.code` of an error (shared-service.md §1): `invalid_api_key` for a missing or wrong key (401),
 * `rate_limit_exceeded` for a rate limit and `insufficient_quota` for a used-up quota (429), null otherwise.
 */
function openAIErrorCode(err: unknown): string | null {
  if (!(err instanceof DaemonError)) return null;
  if (err.code === ErrorCode.UNAUTHORIZED) return 'invalid_api_key';
  if (err.code === ErrorCode.RATE_LIMITED) return 'rate_limit_exceeded';
  if (err.code === ErrorCode.QUOTA_EXCEEDED) return 'insufficient_quota';
  return null;
}

/**
 * Maps anything thrown on a /v1 route to the OpenAI error shape `{"error":{"message","type","param","code"}}` —
 * the one place that decides this dialect's rendering. Statuses follow the native dialect (toOllamaError: domain
 * codes, HttpExceptions, Fastify's statusCode); `param` is the InvalidRequestError's field when known, `code` as
 * openAIErrorCode; a 429's `type` repeats its code (`rate_limit_exceeded`, `insufficient_quota`), as the issue and
 * OpenAI's quota errors do. 5xx other than 503 (busy) get `shouldRetry: false`.
 */
export function toOpenAIError(err: unknown): OpenAIErrorRendering {
  const { status, message } = toOllamaError(err);
  const param = err instanceof DaemonError && 'param' in err && typeof err.param === 'string' ? err.param : null;
  const transient = err instanceof DaemonError && err.code === ErrorCode.SERVER_BUSY;
  const code = openAIErrorCode(err);
  const type = code === 'rate_limit_exceeded' || code === 'insufficient_quota' ? code : openAIErrorType(status);
  return {
    status,
    body: { error: { message, type, param, code } },
    ...(status >= 500 && status !== 503 && !transient ? { shouldRetry: false } : {}),
  };
}

/** The in-band SSE payload for an error after streaming began: `{"error":{…}}` (the SDK raises APIError on it). */
export function openAIErrorFrame(err: unknown): object {
  return toOpenAIError(err).body;
}

/**
 * Renders every error of the OpenAI controller (bound with @UseFilters, so it wins over the global Ollama filter):
 * JSON body of toOpenAIError, `x-should-retry: false` on deterministic 5xx, and on a 429 the headers of
 * refusalHeaders (`retry-after`, `x-ratelimit-*`). When a stream already began, the SSE
 * writer owns the error frame; this only ends the response.
 */
@Catch()
export class OpenAIExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HTTP');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const request = http.getRequest<FastifyRequest>();
    if (endStartedResponse(reply, exception, this.logger)) return;
    const { status, body, shouldRetry } = toOpenAIError(exception);
    if (status >= 500) {
      const stack = exception instanceof Error && !(exception instanceof HttpException) ? exception.stack : undefined;
      this.logger.error(`${request.method} ${request.url} → ${status}: ${body.error.message}`, stack);
    } else {
      this.logger.debug(`${request.method} ${request.url} → ${status}: ${body.error.message}`);
    }
    if (shouldRetry === false) void reply.header('x-should-retry', 'false');
    // A 429: retry-after(-ms), the x-ratelimit-* set, and x-should-retry: false for a quota (shared-service.md §1).
    if (exception instanceof RateLimitedError) void reply.headers(refusalHeaders(exception, 'openai'));
    void reply.status(status).header('content-type', 'application/json; charset=utf-8').send(body);
  }
}
