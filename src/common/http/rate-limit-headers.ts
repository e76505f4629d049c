import { QuotaExceededError, RateLimitedError, RateLimitState, RateLimitWindow, RequestTooLargeError } from '../errors';

/**
 * Which rate-limit headers a route speaks (its `@Metered(dialect)` mark; docs/security.md "Rate limits and quotas"):
 * OpenAI's `x-ratelimit-*`, Anthropic's `anthropic-ratelimit-*`, and for the native API (Ollama has none) the
 * OpenAI set.
 */
export type RateLimitDialect = 'openai' | 'anthropic' | 'ollama';

/** Response headers, lower-case names. */
export type HeaderMap = Record<string, string>;

/**
 * A duration as Go's `time.Duration.String()` writes it at millisecond precision, the form of OpenAI's
 * `x-ratelimit-reset-*` (shared-service.md §1: `1s`, `6m0s`, `12ms`): under a second `<n>ms`; else hours and minutes
 * when present, then seconds with up to three decimals and no trailing zeros (`1.5s`, `1m0.25s`, `1h0m0s`). Negative
 * or NaN → `0s`.
 * @param ms milliseconds (rounded up to a whole millisecond).
 */
export function goDuration(ms: number): string {
  const total = Number.isFinite(ms) && ms > 0 ? Math.ceil(ms) : 0;
  if (total === 0) return '0s';
  if (total < 1000) return `${total}ms`;
  const hours = Math.floor(total / 3_600_000);
  const minutes = Math.floor((total % 3_600_000) / 60_000);
  const millis = total % 60_000;
  const seconds = `${Math.floor(millis / 1000)}${
    millis % 1000 === 0
      ? ''
      : `.${String(millis % 1000)
          .padStart(3, '0')
          .replace(/0+$/, '')}`
  }s`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}`;
  if (minutes > 0) return `${minutes}m${seconds}`;
  return seconds;
}

/**
 * The moment `ms` from `nowMs`, as Anthropic's `anthropic-ratelimit-*-reset` writes it (shared-service.md §2: RFC
 * 3339, `2025-08-21T12:40:59Z`): UTC, rounded up to the whole second, no fraction.
 */
export function rfc3339After(ms: number, nowMs: number): string {
  const at = Math.ceil((nowMs + Math.max(0, ms)) / 1000) * 1000;
  return new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** OpenAI's trio for one window (`x-ratelimit-limit-<kind>`, `-remaining-`, `-reset-`). */
function openAIWindow(kind: 'requests' | 'tokens', w: RateLimitWindow): HeaderMap {
  return {
    [`x-ratelimit-limit-${kind}`]: String(w.limit),
    [`x-ratelimit-remaining-${kind}`]: String(Math.max(0, w.remaining)),
    [`x-ratelimit-reset-${kind}`]: goDuration(w.resetMs),
  };
}

/** Anthropic's trio for one window (`anthropic-ratelimit-<kind>-limit`, `-remaining`, `-reset`). */
function anthropicWindow(kind: 'requests' | 'tokens', w: RateLimitWindow, nowMs: number): HeaderMap {
  return {
    [`anthropic-ratelimit-${kind}-limit`]: String(w.limit),
    [`anthropic-ratelimit-${kind}-remaining`]: String(Math.max(0, w.remaining)),
    [`anthropic-ratelimit-${kind}-reset`]: rfc3339After(w.resetMs, nowMs),
  };
}

/**
 * The rate-limit headers of a state in a dialect, for successful responses and 429s alike (each window only when the
 * caller's policy sets it): OpenAI and the native API `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` (reset
 * a Go duration, shared-service.md §1); Anthropic `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}`
 * (reset an RFC 3339 time, §2).
 * @param nowMs the clock Anthropic's absolute reset times are computed from (ms since the epoch).
 */
export function rateLimitHeaders(dialect: RateLimitDialect, state: RateLimitState, nowMs = Date.now()): HeaderMap {
  const headers: HeaderMap = {};
  for (const kind of ['requests', 'tokens'] as const) {
    const w = state[kind];
    if (!w) continue;
    Object.assign(headers, dialect === 'anthropic' ? anthropicWindow(kind, w, nowMs) : openAIWindow(kind, w));
  }
  return headers;
}

/**
 * The headers of a 429 (RateLimitedError, QuotaExceededError, RequestTooLargeError) in a dialect: the state's
 * rate-limit headers, `retry-after` (whole seconds, at least 1: OpenAI's TooManyRequests, shared-service.md §1) and
 * `retry-after-ms` (what both official SDKs read first, §1, §2), and `x-should-retry: false` for a used-up quota or a
 * request larger than the whole limit (the SDKs retry any other 429).
 */
export function refusalHeaders(err: RateLimitedError, dialect: RateLimitDialect, nowMs = Date.now()): HeaderMap {
  const wait = Number.isFinite(err.retryAfterMs) && err.retryAfterMs > 0 ? err.retryAfterMs : 1000;
  return {
    ...rateLimitHeaders(dialect, err.state, nowMs),
    'retry-after': String(Math.max(1, Math.ceil(wait / 1000))),
    'retry-after-ms': String(Math.max(1, Math.ceil(wait))),
    ...(err instanceof QuotaExceededError || err instanceof RequestTooLargeError ? { 'x-should-retry': 'false' } : {}),
  };
}
