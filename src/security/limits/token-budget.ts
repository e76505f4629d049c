import type { TokenReservation } from './tenant-limiter';

/**
 * Injection token of the {@link TokenBudget}: how generation (the domain) reserves and settles the tokens of the
 * current request against its principal's `tokens_per_minute` / `tokens_per_day` without knowing HTTP, policies or
 * stores. Optional: without it (a bare InferenceModule) nothing is counted. LlamadModule provides RequestTokenBudget.
 */
export const TOKEN_BUDGET = Symbol('TOKEN_BUDGET');

/** One request's token account (bound to its principal and limits when it was taken). */
export interface TokenMeter {
  /**
   * Reserves `tokens` (prompt + output limit) before generation starts.
   * @returns the reservation to settle with the real usage when the generation ends; undefined when nothing is
   *   counted.
   * @throws RateLimitedError, QuotaExceededError or RequestTooLargeError (429): refused, nothing generated.
   */
  reserve(tokens: number): Promise<TokenReservation | undefined>;
  /** Counts tokens already used, without refusing (embeddings: prompt tokens after the fact). Never throws. */
  charge(tokens: number): void;
}

/** Gives each request its {@link TokenMeter}. */
export interface TokenBudget {
  /**
   * The meter of the current request: call it where the request's RequestContext is current (the subscribe of a
   * service's Observable, the start of an async service method), not in a scheduler callback.
   * @returns undefined outside a request, or when its principal has no token limits (no cost then).
   */
  forCurrentRequest(): TokenMeter | undefined;
}
