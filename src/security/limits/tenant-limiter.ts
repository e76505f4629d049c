import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  QuotaExceededError,
  RateLimitedError,
  RateLimitState,
  RateLimitWindow,
  RequestTooLargeError,
} from '../../common/errors';
import type { RequestContext } from '../../observability/request-context';
import type { TenantLimits } from '../tenant-policy';
import { LimitWindowName, RATE_LIMIT_STORE, RateLimitStore, WINDOW_SECONDS, WindowCount } from './rate-limit-store';
import { goDuration } from '../../common/http/rate-limit-headers';

/** Added to a window's reset for `retry-after`, ms: a retry sent exactly at the reset may still land in the window. */
export const RETRY_MARGIN_MS = 50;

/**
 * `retry-after` of a refusal by `window`, ms: its reset plus {@link RETRY_MARGIN_MS}, but never more than the window
 * (the openai SDK ignores a `retry-after-ms` over 60 s and falls back to a short backoff; shared-service.md §1).
 */
function retryAfter(window: LimitWindowName, count: WindowCount | undefined): number {
  return Math.min((count?.resetMs ?? 0) + RETRY_MARGIN_MS, WINDOW_SECONDS[window] * 1000);
}

/** `retry-after` of a refusal for `concurrent_requests`, ms (a slot frees when one of the caller's requests ends). */
export const CONCURRENCY_RETRY_MS = 1000;

/** The token windows, in the order they are reserved (per minute first: its refusal is the transient one). */
const TOKEN_WINDOWS = ['tokens_per_minute', 'tokens_per_day'] as const;

/** A request admitted under its principal's request limits; `release` once its response ended (idempotent). */
export interface Admission {
  /** The request window after this request (for the success headers); empty without `requests_per_minute`. */
  state: RateLimitState;
  /** Gives back the `concurrent_requests` slot. */
  release(): void;
}

/** Tokens reserved for one generation; `settle` once it ended (done, error or cancel; idempotent). */
export interface TokenReservation {
  /** The token window after the reservation (the tighter of the per-minute and per-day ones). */
  state: RateLimitState;
  /**
   * Replaces the reservation with the tokens really used (prompt + completion): the difference is refunded, or
   * charged when more were used than reserved (an unbounded output that ran past its estimate).
   */
  settle(usedTokens: number): void;
}

/** Points taken from one window, refundable while that window lasts. */
interface Charge {
  window: LimitWindowName;
  points: number;
  /** Date.now() at which the charged window ends: after it the count is gone, and a refund would go to the next. */
  endsAt: number;
}

/**
 * The decisions of tenant limits (issue 33 item 2; docs/security.md "Rate limits and quotas") over a
 * {@link RateLimitStore}: admission (`requests_per_minute`, `concurrent_requests`), token reservations
 * (`tokens_per_minute`, `tokens_per_day`: prompt + output limit, settled with the real usage) and after-the-fact
 * charges (embeddings). Limits are per principal id; a principal without a limit is never counted in that window.
 * Refused requests and reservations are refunded at once (they do not use the budget). When the store fails the
 * request is let through (fail open) with one warning per outage: a limit must not take the service down.
 */
@Injectable()
export class TenantLimiter {
  private readonly logger = new Logger('RateLimits');
  private storeDown = false;

  constructor(@Inject(RATE_LIMIT_STORE) private readonly store: RateLimitStore) {}

  /** Whether `limits` set anything this limiter counts (else the request costs nothing). */
  static counts(limits: TenantLimits | undefined): boolean {
    return (
      limits !== undefined &&
      (limits.requests_per_minute !== undefined ||
        limits.concurrent_requests !== undefined ||
        limits.tokens_per_minute !== undefined ||
        limits.tokens_per_day !== undefined)
    );
  }

  /**
   * Admits one request of `principal` under its `requests_per_minute` and `concurrent_requests`.
   * @param context told which limit refused (`refusal`), for the usage counters.
   * @throws RateLimitedError (429) when either is used up: `retry-after` the minute's reset, or 1 s for concurrency.
   */
  async admit(principal: string, limits: TenantLimits, context?: RequestContext): Promise<Admission> {
    const charges: Charge[] = [];
    const state: RateLimitState = {};
    const rpm = limits.requests_per_minute;
    if (rpm !== undefined) {
      const count = await this.take('requests_per_minute', principal, 1, charges);
      if (count) {
        const requests = windowOf(rpm, count);
        if (count.consumed > rpm) {
          this.refundAll(principal, charges);
          if (context) context.refusal = 'requests_per_minute';
          throw new RateLimitedError(
            `rate limit reached for requests: requests_per_minute is ${rpm}; try again in ${goDuration(count.resetMs)}`,
            retryAfter('requests_per_minute', count),
            { requests },
          );
        }
        state.requests = requests;
      }
    }
    const concurrent = limits.concurrent_requests;
    const slot: Charge[] = [];
    if (concurrent !== undefined) {
      const count = await this.take('concurrent_requests', principal, 1, slot);
      if (count && count.consumed > concurrent) {
        this.refundAll(principal, [...charges, ...slot]);
        if (context) context.refusal = 'concurrent_requests';
        // This request's count in the minute is given back with it.
        const requests = state.requests && { ...state.requests, remaining: state.requests.remaining + 1 };
        throw new RateLimitedError(
          `rate limit reached: concurrent_requests is ${concurrent}; wait for a request to finish`,
          CONCURRENCY_RETRY_MS,
          requests ? { requests } : {},
        );
      }
    }
    let released = false;
    return {
      state,
      release: () => {
        if (released) return;
        released = true;
        this.refundAll(principal, slot);
      },
    };
  }

  /**
   * Reserves `tokens` (prompt + output limit) of `principal` under its `tokens_per_minute` and `tokens_per_day`.
   * @returns undefined when neither is set (nothing to settle).
   * @throws RequestTooLargeError when `tokens` exceed a whole limit (the request can never be admitted as sent);
   *   RateLimitedError when the minute's tokens are not enough now (`retry-after` its reset); QuotaExceededError when
   *   the day's are not (`insufficient_quota`). Nothing stays reserved after a refusal.
   * @param context told which limit refused (`refusal`).
   * @param known the request window from admission, added to a refusal's state (its headers).
   */
  async reserve(
    principal: string,
    limits: TenantLimits,
    tokens: number,
    context?: RequestContext,
    known: RateLimitState = {},
  ): Promise<TokenReservation | undefined> {
    const windows = TOKEN_WINDOWS.filter((w) => limits[w] !== undefined);
    if (windows.length === 0) return undefined;
    const points = Math.max(0, Math.ceil(tokens));
    for (const window of windows) {
      const limit = limits[window]!;
      if (points <= limit) continue;
      const count = await this.read(window, principal);
      if (context) context.refusal = window;
      throw new RequestTooLargeError(
        `request too large: it may use ${points} tokens (prompt + output limit), more than the whole ${window} of ` +
          `${limit}; lower max_tokens / num_predict or shorten the prompt`,
        retryAfter(window, count),
        { ...known, tokens: windowOf(limit, count) },
      );
    }
    const charges: Charge[] = [];
    const after: Partial<Record<LimitWindowName, RateLimitWindow>> = {};
    for (const window of windows) {
      const limit = limits[window]!;
      const count = await this.take(window, principal, points, charges);
      if (!count) continue;
      const tokensWindow = windowOf(limit, count);
      if (count.consumed > limit) {
        this.refundAll(principal, charges);
        if (context) context.refusal = window;
        const left = Math.max(0, limit - (count.consumed - points));
        const wait = goDuration(count.resetMs);
        const refused = { ...known, tokens: { ...tokensWindow, remaining: left } };
        if (window === 'tokens_per_day') {
          throw new QuotaExceededError(
            `token quota exceeded: tokens_per_day is ${limit}, ${left} left, this request needs ${points} (prompt + ` +
              `output limit); it resets in ${wait}`,
            retryAfter(window, count),
            refused,
          );
        }
        throw new RateLimitedError(
          `rate limit reached for tokens: tokens_per_minute is ${limit}, ${left} left, this request needs ${points} ` +
            `(prompt + output limit); try again in ${wait}`,
          retryAfter(window, count),
          refused,
        );
      }
      after[window] = tokensWindow;
    }
    const reported = tighter(after.tokens_per_minute, after.tokens_per_day);
    let settled = false;
    return {
      state: reported ? { tokens: reported } : {},
      settle: (usedTokens: number) => {
        if (settled) return;
        settled = true;
        const used = Math.max(0, Math.ceil(usedTokens));
        if (used < points) this.refundAll(principal, charges, points - used);
        else if (used > points) void this.charge(principal, limits, used - points);
      },
    };
  }

  /**
   * Counts `tokens` already used by `principal` against its token windows without refusing (embeddings are charged
   * after the fact; an output that ran past its reservation). Never throws.
   */
  async charge(principal: string, limits: TenantLimits, tokens: number): Promise<void> {
    const points = Math.max(0, Math.ceil(tokens));
    if (points === 0) return;
    for (const window of TOKEN_WINDOWS) {
      if (limits[window] !== undefined) await this.take(window, principal, points, []);
    }
  }

  /** Consumes from the store; records the charge. undefined when the store failed (the request goes through). */
  private async take(
    window: LimitWindowName,
    key: string,
    points: number,
    charges: Charge[],
  ): Promise<WindowCount | undefined> {
    try {
      const count = await this.store.consume(window, key, points);
      charges.push({ window, points, endsAt: Date.now() + count.resetMs });
      this.recovered();
      return count;
    } catch (err) {
      this.failed(err);
      return undefined;
    }
  }

  /** The store's count, undefined when there is none or the store failed. */
  private async read(window: LimitWindowName, key: string): Promise<WindowCount | undefined> {
    try {
      return await this.store.get(window, key);
    } catch (err) {
      this.failed(err);
      return undefined;
    }
  }

  /**
   * Gives charges back (each at most `points` when given), skipping those whose window has ended: its count is gone
   * already. Runs in the background; failures are logged.
   */
  private refundAll(key: string, charges: Charge[], points?: number): void {
    const now = Date.now();
    for (const c of charges) {
      if (now >= c.endsAt) continue;
      const n = Math.min(c.points, points ?? c.points);
      this.store.refund(c.window, key, n).then(
        () => this.recovered(),
        (err: unknown) => this.failed(err),
      );
    }
  }

  private failed(err: unknown): void {
    if (this.storeDown) return;
    this.storeDown = true;
    this.logger.warn(
      `the rate-limit store failed (${err instanceof Error ? err.message : String(err)}); requests are let through ` +
        'uncounted until it answers again',
    );
  }

  private recovered(): void {
    if (!this.storeDown) return;
    this.storeDown = false;
    this.logger.log('the rate-limit store answers again; limits are enforced');
  }
}

/** A window's figures for the headers: remaining never negative; no count = the whole limit, a full window. */
function windowOf(limit: number, count: WindowCount | undefined): RateLimitWindow {
  if (!count) return { limit, remaining: limit, resetMs: 0 };
  return { limit, remaining: Math.max(0, limit - count.consumed), resetMs: count.resetMs };
}

/** The window with less left (per minute on a tie), or the only one. */
function tighter(a: RateLimitWindow | undefined, b: RateLimitWindow | undefined): RateLimitWindow | undefined {
  if (!a || !b) return a ?? b;
  return b.remaining < a.remaining ? b : a;
}
