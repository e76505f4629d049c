import { Observable } from 'rxjs';
import { RequestCancelledError } from '../common/errors';
import type { SchedulerService } from './scheduler.service';
import type { AcquireRequest, RunnerLease } from './scheduler.types';

/**
 * Runs one asynchronous job on a runner leased through {@link SchedulerService.withRunner} (queueing, loading and
 * releasing as for every request) and resolves with its result. `work` gets the lease and an AbortSignal that fires
 * when the job must stop (the caller's `signal` fired: the client went away, or the scheduler ended the request); the
 * runner calls it hands the signal to (embed) stop the engine's work.
 * Used by the one-shot routes (embed, rerank); generations stream through withRunner directly.
 * @throws whatever `work` or the load throws; RequestCancelledError when `signal` fires first or the lease ends
 *   without a result.
 */
export function runLeasedJob<T>(
  scheduler: SchedulerService,
  request: AcquireRequest,
  work: (lease: RunnerLease, abort: AbortSignal) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const work$ = scheduler.withRunner(
    request,
    (lease) =>
      // Unsubscribing (the client left) aborts the job and releases the lease.
      new Observable<T>((subscriber) => {
        const abort = new AbortController();
        work(lease, abort.signal).then(
          (value) => {
            subscriber.next(value);
            subscriber.complete();
          },
          (err: unknown) => subscriber.error(err),
        );
        return () => abort.abort();
      }),
  );
  return new Promise<T>((resolve, reject) => {
    let result: { value: T } | undefined;
    const onAbort = () => {
      subscription.unsubscribe();
      reject(new RequestCancelledError());
    };
    const subscription = work$.subscribe({
      next: (value) => (result = { value }),
      error: (err: unknown) => {
        signal?.removeEventListener('abort', onAbort);
        reject(err);
      },
      complete: () => {
        signal?.removeEventListener('abort', onAbort);
        if (result) resolve(result.value);
        else reject(new RequestCancelledError());
      },
    });
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}
