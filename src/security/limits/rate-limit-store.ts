/**
 * The counting half of tenant limits (docs/security.md "Rate limits and quotas"): one fixed window per principal and
 * limit, kept by a store that replicas may share. The decisions (what to refuse, what to refund) are the
 * TenantLimiter's; a store only counts.
 */

/** Injection token of the {@link RateLimitStore} (default: FlexibleRateLimitStore, in memory or in Redis). */
export const RATE_LIMIT_STORE = Symbol('RATE_LIMIT_STORE');

/** The counted limits, named as the policy's fields (TenantLimits) and RequestContext.refusal. */
export type LimitWindowName = 'requests_per_minute' | 'tokens_per_minute' | 'tokens_per_day' | 'concurrent_requests';

/**
 * Length of each window, seconds: a minute, a day, and for `concurrent_requests` a safety expiry: a count left by a
 * replica that died with requests in flight disappears after it (docs/security.md).
 */
export const WINDOW_SECONDS: Readonly<Record<LimitWindowName, number>> = {
  requests_per_minute: 60,
  tokens_per_minute: 60,
  tokens_per_day: 86_400,
  concurrent_requests: 600,
};

/** One principal's count in one window. */
export interface WindowCount {
  /** Points (requests or tokens) counted in the current window, after the operation. */
  consumed: number;
  /** Milliseconds until the window ends and its count starts again from 0. */
  resetMs: number;
}

/**
 * Where limits are counted. Fixed windows: the first point of a principal starts its window of
 * {@link WINDOW_SECONDS}; when the window ends the count is gone. Every operation is atomic per key, so replicas that
 * share the store share one count. Implementations never refuse: they count, the limiter compares.
 */
export interface RateLimitStore {
  /**
   * Adds `points` (a positive integer) to the principal's count in `window`, starting the window when there is none.
   * @returns the count after the addition and the time to the window's end.
   * @throws when the store cannot be reached and has no fallback (the limiter then lets the request through).
   */
  consume(window: LimitWindowName, key: string, points: number): Promise<WindowCount>;
  /** Takes `points` back from the principal's count (a refund: a refused or finished request, unused tokens). */
  refund(window: LimitWindowName, key: string, points: number): Promise<void>;
  /** The principal's count in `window`; undefined when it has none (nothing counted, or the window ended). */
  get(window: LimitWindowName, key: string): Promise<WindowCount | undefined>;
}
