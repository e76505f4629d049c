import { HttpException, Logger } from '@nestjs/common';
import { DaemonError, ErrorCode, InternalError } from '../errors';
import { describeSystemError, isSystemError, safeErrorMessage } from './safe-error-message';

/** An error as the native (Ollama) dialect renders it: status code + `{"error": message}` body. */
export interface OllamaErrorBody {
  status: number;
  message: string;
}

/**
 * HTTP status of a domain error in the Ollama dialect (reference/ollama-api.md §5.2; ARCHITECTURE.md §8 table).
 * Exhaustive: a new ErrorCode fails the build here until it is given a status.
 */
export function ollamaStatus(code: ErrorCode): number {
  switch (code) {
    case ErrorCode.INVALID_REQUEST:
    case ErrorCode.UNSUPPORTED_CAPABILITY:
    case ErrorCode.EXCEED_CONTEXT:
    case ErrorCode.DIGEST_MISMATCH:
      return 400;
    case ErrorCode.UNAUTHORIZED:
      return 401;
    case ErrorCode.FORBIDDEN:
      return 403;
    case ErrorCode.MODEL_NOT_FOUND:
      return 404;
    case ErrorCode.RATE_LIMITED:
    case ErrorCode.QUOTA_EXCEEDED:
      return 429;
    case ErrorCode.CANCELLED:
      return 499;
    case ErrorCode.MODEL_LOAD_FAILED:
    case ErrorCode.INSUFFICIENT_MEMORY:
    case ErrorCode.RUNNER_TERMINATED:
    case ErrorCode.INVALID_CONFIG:
    case ErrorCode.INTERNAL:
      return 500;
    case ErrorCode.REGISTRY_ERROR:
      return 502;
    case ErrorCode.SERVER_BUSY:
      return 503;
  }
}

/** Message of a Nest HttpException: its string response, or the `message` of its object response. */
function httpExceptionMessage(err: HttpException): string {
  const response = err.getResponse();
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown }).message;
  if (Array.isArray(message)) return message.map(String).join('; ');
  return typeof message === 'string' ? message : err.message;
}

/**
 * Maps anything thrown while handling a native-API request to its Ollama rendering — the one place that decides
 * status codes and message texts for every dialect (the OpenAI and Anthropic renderers take status and message from
 * here). Domain errors by code; Nest HttpExceptions and Fastify errors (which carry `statusCode`, e.g. 413 for a body
 * over the limit) keep their status; a Node system error (`ENOENT`, `EACCES`, `EISDIR`, `ENOSPC`, `EEXIST`…, or an
 * InternalError that only wraps one) is a 500 `internal error: <syscall>: <errno text>` such as
 * `internal error: open: no such file or directory`; anything else is a 500 with the error's message only (never a
 * stack trace).
 * Messages never carry server paths (issue 11 item 4): a 5xx message has every absolute path replaced by `<path>`,
 * and any message loses the paths named by system errors in the cause chain (safeErrorMessage). When the text was
 * changed, the original error is logged once (with its stack) so the server log keeps the full story.
 * @returns `{status, message}`; status is 400–599.
 */
export function toOllamaError(err: unknown): OllamaErrorBody {
  const raw = rawOllamaError(err);
  const message = safeErrorMessage(raw.message, raw.status, err);
  if (raw.systemError || message !== raw.message) logRewritten(err, raw.status, message);
  return { status: raw.status, message };
}

const logger = new Logger('HTTP');
/** Errors whose rewritten message was already logged (a filter and a stream frame may both render one error). */
const logged = new WeakSet<object>();

function logRewritten(err: unknown, status: number, message: string): void {
  if (typeof err !== 'object' || err === null || logged.has(err)) return;
  logged.add(err);
  const cause = (err as { cause?: unknown }).cause;
  const original = err instanceof Error ? (err.stack ?? err.message) : String(err);
  const detail = cause instanceof Error ? `\ncaused by: ${cause.stack ?? cause.message}` : '';
  const line = `${status} answered as "${message}"; original error: ${original}${detail}`;
  if (status >= 500) logger.error(line);
  else logger.warn(line);
}

/** Status and unscrubbed message (see toOllamaError); `systemError` when a system error's text was replaced. */
function rawOllamaError(err: unknown): OllamaErrorBody & { systemError?: true } {
  if (isSystemError(err)) {
    return { status: 500, message: `internal error: ${describeSystemError(err)}`, systemError: true };
  }
  if (err instanceof InternalError && isSystemError(err.cause) && err.message === err.cause.message) {
    return { status: 500, message: `internal error: ${describeSystemError(err.cause)}`, systemError: true };
  }
  if (err instanceof DaemonError) return { status: ollamaStatus(err.code), message: err.message };
  if (err instanceof HttpException) return { status: err.getStatus(), message: httpExceptionMessage(err) };
  if (typeof err === 'object' && err !== null) {
    const { statusCode, message } = err as { statusCode?: unknown; message?: unknown };
    const text = typeof message === 'string' && message !== '' ? message : 'internal error';
    if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 600) {
      return { status: statusCode, message: text };
    }
    return { status: 500, message: text };
  }
  return { status: 500, message: String(err) || 'internal error' };
}

/** The in-band NDJSON line for an error after streaming began (§5.1): `{"error":"…"}`. */
export function ollamaErrorLine(err: unknown): object {
  return { error: toOllamaError(err).message };
}
