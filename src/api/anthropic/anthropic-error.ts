import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { RateLimitedError } from '../../common/errors';
import { endStartedResponse, refusalHeaders, toOllamaError } from '../../common/http';
import { anthropicId } from './anthropic-ids';
import { AnthropicErrorBody } from './anthropic.types';

/**
 * Anthropic `error.type` of an HTTP status (reference/ollama-api.md §5.4): 400 invalid_request_error,
 * 401 authentication_error, 403 permission_error, 404 not_found_error, 413 request_too_large, 429 rate_limit_error,
 * 503/529 overloaded_error, anything else api_error.
 */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    default:
      return 'api_error';
  }
}

/**
 * Any thrown value → status + Anthropic error body. The status and message come from the daemon's one status
 * decision (toOllamaError: 400 invalid request, 404 unknown model, 503 server busy, 500 otherwise).
 */
export function toAnthropicError(err: unknown): { status: number; body: AnthropicErrorBody } {
  const { status, message } = toOllamaError(err);
  return {
    status,
    body: { type: 'error', error: { type: anthropicErrorType(status), message }, request_id: anthropicId('req') },
  };
}

/**
 * The one renderer of /v1/messages errors, bound to AnthropicController: `{"type":"error","error":{"type",
 * "message"},"request_id"}` with the status, `request-id` header, and `x-should-retry: false` on a deterministic 5xx
 * (all but 503) so SDKs do not resend it (clients.md §1.0 item 7), and on a 429 the headers of refusalHeaders
 * (`retry-after`, `anthropic-ratelimit-*`). Mid-stream errors are the SSE responder's
 * `event: error` frame; here a started response is only ended.
 */
@Catch()
export class AnthropicExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Anthropic');

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    if (endStartedResponse(reply, exception, this.logger)) return;
    const { status, body } = toAnthropicError(exception);
    if (status >= 500) this.logger.error(`${status}: ${body.error.message}`);
    void reply
      .status(status)
      .header('content-type', 'application/json; charset=utf-8')
      .header('request-id', body.request_id)
      // Only on a deterministic 5xx: an empty value (header(name, undefined)) reached clients as `x-should-retry: `.
      .headers(status >= 500 && status !== 503 ? { 'x-should-retry': 'false' } : {})
      // A 429: retry-after(-ms) and the anthropic-ratelimit-* set (shared-service.md §2).
      .headers(exception instanceof RateLimitedError ? refusalHeaders(exception, 'anthropic') : {})
      .send(body);
  }
}
