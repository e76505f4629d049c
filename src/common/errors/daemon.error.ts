import { ErrorCode } from './error-code';

/**
 * Base of every error the daemon's services throw (ARCHITECTURE.md §8, after twenty's domain exceptions).
 * Framework-free: no Nest imports. The message is the user-facing text (Ollama's exact wording where one exists,
 * reference/ollama-api.md §5.2); each dialect's filter chooses the status code from `code`.
 */
export abstract class DaemonError extends Error {
  abstract readonly code: ErrorCode;

  protected constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A request that is malformed or fails validation. Ollama: 400. `param` names the offending field when known. */
export class InvalidRequestError extends DaemonError {
  readonly code = ErrorCode.INVALID_REQUEST;
  constructor(
    message: string,
    readonly param?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * A request without a valid API key when keys are configured (LLAMAD_API_KEYS; docs/security.md). 401 in every
 * dialect: Ollama `{"error": …}`, OpenAI `invalid_request_error` / `invalid_api_key`, Anthropic
 * `authentication_error`. The message never contains the key that was sent.
 */
export class UnauthorizedError extends DaemonError {
  readonly code = ErrorCode.UNAUTHORIZED;
  constructor(message = 'unauthorized: a valid API key is required (Authorization: Bearer <key> or x-api-key)') {
    super(message);
  }
}

/**
 * A model name that resolves to no local manifest. Ollama: 404. The message is given by the caller because the
 * wording differs per route (`model 'x' not found` on generate/chat/show, `model "x" not found, try pulling it first`
 * on embed), see reference/ollama-api.md §5.2; `notFoundMessage()` builds the common form.
 */
export class ModelNotFoundError extends DaemonError {
  readonly code = ErrorCode.MODEL_NOT_FOUND;
  constructor(
    readonly model: string,
    message: string = ModelNotFoundError.notFoundMessage(model),
  ) {
    super(message);
  }

  /** `model '<name>' not found` (reference/ollama-api.md §5.2, generate/chat/show/delete). */
  static notFoundMessage(model: string): string {
    return `model '${model}' not found`;
  }
}

/** The model lacks a capability the request needs (`"x" does not support chat`). Ollama: 400. */
export class UnsupportedCapabilityError extends DaemonError {
  readonly code = ErrorCode.UNSUPPORTED_CAPABILITY;
  constructor(
    message: string,
    readonly capability: string,
  ) {
    super(message);
  }
}

/** The prompt cannot fit the context and cannot be truncated. Ollama: 400. Sizes in tokens. */
export class ContextLengthExceededError extends DaemonError {
  readonly code = ErrorCode.EXCEED_CONTEXT;
  constructor(
    message: string,
    readonly promptTokens?: number,
    readonly contextSize?: number,
  ) {
    super(message);
  }
}

/** The runner could not load the model (bad file, unknown architecture, addon missing). Ollama: 500. */
export class ModelLoadError extends DaemonError {
  readonly code = ErrorCode.MODEL_LOAD_FAILED;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Not enough (V)RAM to load or run. Ollama: 500. */
export class InsufficientMemoryError extends DaemonError {
  readonly code = ErrorCode.INSUFFICIENT_MEMORY;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The scheduler's pending queue is full (OLLAMA_MAX_QUEUE). Ollama: 503, exact text in §5.2. */
export class ServerBusyError extends DaemonError {
  readonly code = ErrorCode.SERVER_BUSY;
  constructor(message = 'server busy, please try again.  maximum pending requests exceeded') {
    super(message);
  }
}

/** A registry call failed (pull/push). `upstreamStatus` is the registry's HTTP status when there was one. */
export class RegistryError extends DaemonError {
  readonly code = ErrorCode.REGISTRY_ERROR;
  constructor(
    message: string,
    readonly upstreamStatus?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Content does not hash to the digest it was announced with. Ollama: 400. */
export class DigestMismatchError extends DaemonError {
  readonly code = ErrorCode.DIGEST_MISMATCH;
  constructor(
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`digest mismatch, expected "${expected}", got "${actual}"`);
  }
}

/** The client went away; the work was cancelled. Logged, never rendered (there is nobody to render it to). */
export class RequestCancelledError extends DaemonError {
  readonly code = ErrorCode.CANCELLED;
  constructor(message = 'request canceled') {
    super(message);
  }
}

/**
 * The runner process of a model died (abort, signal, OOM kill, exit) while requests were in flight or while loading
 * (docs/architecture.md "Runner processes"). Ollama: 500 with `llama runner process has terminated: <reason>`, where
 * the reason is the runner's last meaningful stderr line (e.g. `GGML_ASSERT(ggml_can_mul_mat(k, q)) failed`), else
 * Go's exit text (`exit status 1`, `signal: aborted`). 500 in every dialect.
 */
export class RunnerTerminatedError extends DaemonError {
  readonly code = ErrorCode.RUNNER_TERMINATED;
  /**
   * @param reason the text after `llama runner process has terminated: `.
   * @param death how the process ended ('abort', 'signal', 'exit', 'oom', 'hang'), when this error reports a death
   *   itself (absent when it repeats an earlier one, e.g. during crash-loop back-off).
   */
  constructor(
    readonly reason: string,
    readonly death?: 'abort' | 'signal' | 'exit' | 'oom' | 'hang',
  ) {
    super(`llama runner process has terminated: ${reason}`);
  }
}

/** Anything unexpected (unknown native or JS errors). Ollama: 500. The message must not contain a stack trace. */
export class InternalError extends DaemonError {
  readonly code = ErrorCode.INTERNAL;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * Wraps any thrown value into a DaemonError: DaemonErrors pass through, anything else becomes an InternalError
 * carrying only the original message (never its stack).
 */
export function toDaemonError(err: unknown): DaemonError {
  if (err instanceof DaemonError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new InternalError(message || 'internal error', { cause: err });
}

/**
 * A setting of the daemon's environment that cannot be used (e.g. LLAMAD_CACHE_SCOPE=tenant): loadConfig throws it and
 * the daemon refuses to start with its message as one line (main.ts). 500 if it ever reached a request.
 */
export class InvalidConfigError extends DaemonError {
  readonly code = ErrorCode.INVALID_CONFIG;
  constructor(message: string) {
    super(message);
  }
}

/**
 * The caller's policy does not allow this operation (docs/security.md "Tenants"): a `user` key that creates, pulls,
 * pushes, copies or deletes a model, or reads an admin-only route (`GET /api/usage`). 403 in every dialect: Ollama
 * `{"error": …}`, OpenAI `permission_error`, Anthropic `permission_error`. Models outside a key's list are never
 * forbidden: they answer "model not found" (a key must not learn that they exist).
 */
export class ForbiddenError extends DaemonError {
  readonly code = ErrorCode.FORBIDDEN;
  constructor(message = 'forbidden: this API key may not perform this operation') {
    super(message);
  }
}

/** One rate-limit window as the limiter reports it (the figures of the `x-ratelimit-*` headers). */
export interface RateLimitWindow {
  /** Requests or tokens the window allows. */
  limit: number;
  /** What is left of it now (never negative). */
  remaining: number;
  /** Milliseconds until the window resets to its full limit. */
  resetMs: number;
}

/**
 * A principal's rate-limit state at admission (shared-service.md §1, §2): the request window (per minute) and the
 * token window (per minute, or per day when that is the tighter one), each when the policy sets it. Each dialect
 * renders it as its own headers (`x-ratelimit-*`, `anthropic-ratelimit-*`), on 429s and on successful responses.
 */
export interface RateLimitState {
  requests?: RateLimitWindow;
  tokens?: RateLimitWindow;
}

/**
 * A request refused because the caller's rate limit (requests per minute, tokens per minute, concurrent requests) is
 * used up for now (docs/security.md "Tenants"). 429 in every dialect, with `retry-after` (seconds, at least 1) and
 * `retry-after-ms`: Ollama `{"error": …}`, OpenAI `rate_limit_exceeded`, Anthropic `rate_limit_error`.
 */
export class RateLimitedError extends DaemonError {
  readonly code: ErrorCode = ErrorCode.RATE_LIMITED;
  /**
   * @param message the user-facing text (names the limit, never a key).
   * @param retryAfterMs milliseconds until a retry can succeed.
   * @param state the windows to report in the dialect's headers.
   */
  constructor(
    message: string,
    readonly retryAfterMs: number,
    readonly state: RateLimitState = {},
  ) {
    super(message);
  }
}

/**
 * A request refused because the caller's quota (tokens per day) is used up until it resets (docs/security.md
 * "Tenants"). 429 in every dialect; OpenAI renders `insufficient_quota` with `x-should-retry: false` (its SDK would
 * otherwise retry a quota that resets hours later).
 */
export class QuotaExceededError extends RateLimitedError {
  override readonly code: ErrorCode = ErrorCode.QUOTA_EXCEEDED;
}

/**
 * A request whose token reservation (prompt + output limit) is larger than the caller's whole token limit (tokens per
 * minute or per day, docs/security.md "Rate limits and quotas"): it can never be admitted as sent. 429 like every
 * rate limit (OpenAI `rate_limit_exceeded`, "Request too large"), but rendered with `x-should-retry: false`: the
 * clients' automatic retries could not succeed.
 */
export class RequestTooLargeError extends RateLimitedError {}
