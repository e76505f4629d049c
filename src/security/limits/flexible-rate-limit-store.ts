import type { Redis } from 'ioredis';
import type { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { LimitWindowName, RateLimitStore, WINDOW_SECONDS, WindowCount } from './rate-limit-store';

/**
 * Points of each window limiter: never reached, so the library never refuses and only counts (limits differ per
 * principal and may change on SIGHUP; the TenantLimiter compares the count with the principal's own limit).
 */
const UNBOUNDED_POINTS = Number.MAX_SAFE_INTEGER;

/** What a limiter answers, reduced to the store's view. */
function countOf(res: RateLimiterRes, durationSec: number): WindowCount {
  // Redis answers -1 for a key without expiry; the library sets one on every key it creates, so that is a race with
  // the key's creation: the whole window is ahead.
  const resetMs = res.msBeforeNext >= 0 ? res.msBeforeNext : durationSec * 1000;
  return { consumed: res.consumedPoints, resetMs };
}

/** Options of {@link FlexibleRateLimitStore}. */
export interface FlexibleRateLimitStoreOptions {
  /**
   * The shared Redis/Valkey connection (REDIS_CLIENT); absent = counts in this process's memory. Its keys are
   * `llamad:<window>:<principal id>`.
   */
  redis?: Redis;
}

/**
 * The default {@link RateLimitStore}, over `rate-limiter-flexible` (fixed windows, atomic per key): one limiter per
 * window (WINDOW_SECONDS). In memory (RateLimiterMemory) by default; with a Redis client (LLAMAD_REDIS_URL) a
 * RateLimiterRedis per window, whose operations run as one Lua script each, so replicas share one count.
 *
 * Redis down: each Redis limiter has an in-memory `insuranceLimiter`, and is built with `rejectIfRedisNotReady`: while
 * the connection is not ready every operation is counted in this process's memory instead (fail soft: limits still
 * hold per replica, so N replicas allow up to N budgets until Redis is back; the counts kept meanwhile are not
 * merged back). The warn line per outage is the Redis client's (createRedisClient).
 *
 * The library is loaded, and the limiters made, on the first operation: a daemon whose principals have no limits
 * never loads it.
 */
export class FlexibleRateLimitStore implements RateLimitStore {
  private limiters?: Promise<Record<LimitWindowName, RateLimiterMemory | RateLimiterRedis>>;

  constructor(private readonly options: FlexibleRateLimitStoreOptions = {}) {}

  /** The limiter of `window` (all four are made at the first call). */
  private async limiter(window: LimitWindowName): Promise<RateLimiterMemory | RateLimiterRedis> {
    this.limiters ??= this.makeLimiters();
    return (await this.limiters)[window];
  }

  private async makeLimiters(): Promise<Record<LimitWindowName, RateLimiterMemory | RateLimiterRedis>> {
    const { RateLimiterMemory, RateLimiterRedis } = await import('rate-limiter-flexible');
    const options = this.options;
    const make = (window: LimitWindowName) => {
      const base = { keyPrefix: `llamad:${window}`, points: UNBOUNDED_POINTS, duration: WINDOW_SECONDS[window] };
      if (!options.redis) return new RateLimiterMemory(base);
      return new RateLimiterRedis({
        ...base,
        storeClient: options.redis,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory(base),
      });
    };
    return {
      requests_per_minute: make('requests_per_minute'),
      tokens_per_minute: make('tokens_per_minute'),
      tokens_per_day: make('tokens_per_day'),
      concurrent_requests: make('concurrent_requests'),
    };
  }

  async consume(window: LimitWindowName, key: string, points: number): Promise<WindowCount> {
    return countOf(await (await this.limiter(window)).consume(key, points), WINDOW_SECONDS[window]);
  }

  async refund(window: LimitWindowName, key: string, points: number): Promise<void> {
    if (points > 0) await (await this.limiter(window)).reward(key, points);
  }

  async get(window: LimitWindowName, key: string): Promise<WindowCount | undefined> {
    const res = await (await this.limiter(window)).get(key);
    return res ? countOf(res, WINDOW_SECONDS[window]) : undefined;
  }
}
