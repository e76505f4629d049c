import { HttpException } from '@nestjs/common';
import { DaemonError, ErrorCode } from '../errors';

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
    case ErrorCode.MODEL_NOT_FOUND:
      return 404;
    case ErrorCode.CANCELLED:
      return 499;
    case ErrorCode.MODEL_LOAD_FAILED:
    case ErrorCode.INSUFFICIENT_MEMORY:
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
 * status codes for this dialect. Domain errors by code; Nest HttpExceptions and Fastify errors (which carry
 * `statusCode`, e.g. 413 for a body over the limit) keep their status; anything else is a 500 with the error's
 * message only (never a stack trace).
 */
export function toOllamaError(err: unknown): OllamaErrorBody {
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
