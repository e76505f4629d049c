/**
 * Stable codes of every domain error (ARCHITECTURE.md §8). Each dialect's exception filter maps them with an
 * exhaustive switch, so adding a code breaks the build until every dialect renders it.
 */
export enum ErrorCode {
  INVALID_REQUEST = 'INVALID_REQUEST',
  UNAUTHORIZED = 'UNAUTHORIZED',
  /** A principal's policy does not allow the operation (a `user` key creating or deleting models). 403. */
  FORBIDDEN = 'FORBIDDEN',
  /** A principal's rate limit (requests or tokens per minute, concurrent requests) is used up for now. 429. */
  RATE_LIMITED = 'RATE_LIMITED',
  /** A principal's quota (tokens per day) is used up until it resets. 429 (OpenAI: `insufficient_quota`). */
  QUOTA_EXCEEDED = 'QUOTA_EXCEEDED',
  MODEL_NOT_FOUND = 'MODEL_NOT_FOUND',
  UNSUPPORTED_CAPABILITY = 'UNSUPPORTED_CAPABILITY',
  EXCEED_CONTEXT = 'EXCEED_CONTEXT',
  MODEL_LOAD_FAILED = 'MODEL_LOAD_FAILED',
  INSUFFICIENT_MEMORY = 'INSUFFICIENT_MEMORY',
  SERVER_BUSY = 'SERVER_BUSY',
  REGISTRY_ERROR = 'REGISTRY_ERROR',
  DIGEST_MISMATCH = 'DIGEST_MISMATCH',
  CANCELLED = 'CANCELLED',
  /** A model's runner process died while serving (Ollama: 500 `llama runner process has terminated: …`). */
  RUNNER_TERMINATED = 'RUNNER_TERMINATED',
  /** A setting of the daemon's environment that cannot be used: start-up stops (never a request's answer). */
  INVALID_CONFIG = 'INVALID_CONFIG',
  INTERNAL = 'INTERNAL',
}
