import { MonoTypeOperatorFunction, Observable, Subscription } from 'rxjs';
import type { TokenReservation } from '../security/limits/tenant-limiter';
import type { TokenMeter } from '../security/limits/token-budget';

/**
 * Tokens a generation reserves against its principal's token limits (issue 33 item 2, as the OpenAI API estimates:
 * prompt + the output limit): the prompt plus `num_predict`, or when that is unbounded (< 0) the rest of the context
 * (`num_ctx` − prompt, at least 0).
 * @param promptTokens the prepared prompt's tokens; `numPredict` the effective option; `numCtx` the slot context.
 */
export function reservedTokens(promptTokens: number, numPredict: number, numCtx: number): number {
  const output = numPredict >= 0 ? numPredict : Math.max(0, numCtx - promptTokens);
  return promptTokens + output;
}

/**
 * Runs `source` (a generation) only once `tokens` are reserved with `meter`, and settles the reservation with
 * `used()` (prompt + completion tokens so far) when it ends: done, error or unsubscribe (the client left). A refused
 * reservation errors before `source` is subscribed, so no token is generated. Without a meter: `source` as is.
 */
export function withTokenReservation<T>(
  meter: TokenMeter | undefined,
  tokens: number,
  used: () => number,
): MonoTypeOperatorFunction<T> {
  if (!meter) return (source) => source;
  return (source) =>
    new Observable<T>((subscriber) => {
      let closed = false;
      let reservation: TokenReservation | undefined;
      let inner: Subscription | undefined;
      meter.reserve(tokens).then(
        (r) => {
          reservation = r;
          if (closed) r?.settle(0);
          else inner = source.subscribe(subscriber);
        },
        (err: unknown) => {
          if (!closed) subscriber.error(err);
        },
      );
      return () => {
        const wasClosed = closed;
        closed = true;
        inner?.unsubscribe();
        if (!wasClosed) reservation?.settle(used());
      };
    });
}
