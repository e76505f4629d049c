import { lastValueFrom, Observable, Subscription } from 'rxjs';

/**
 * One request's answer as both an AsyncIterable and an Observable (the design card's "async token generators"):
 *
 * ```ts
 * for await (const chunk of llm.chat({ model, messages })) {
 *   if (enough(chunk)) break; // unsubscribes: generation is cancelled and the slot freed
 * }
 * const final = await llm.chat({ model, messages }).response(); // the `stream: false` form
 * llm.chat(req).observable.subscribe(...);                       // what the HTTP controllers use
 * ```
 *
 * Nothing runs until it is consumed, and each consumption (an iteration, a subscription, a `response()` call) runs
 * the request once more. Leaving a `for await` loop early (`break`, `return`, a thrown error) cancels the work.
 */
export class LlamadStream<T, R = T> implements AsyncIterable<T> {
  /**
   * @param observable the chunks (NDJSON lines on the HTTP API).
   * @param response$ emits the non-streamed response as its last value (`stream: false`).
   * @param stream whether the request asks for a streamed answer: false with `stream: false` and for the answers
   *   Ollama always sends as one object (load/unload shortcuts); the HTTP API then sends `response$`'s last value.
   */
  constructor(
    readonly observable: Observable<T>,
    readonly response$: Observable<R>,
    readonly stream: boolean,
  ) {}

  /** The non-streamed response (`stream: false` form): the last value of `response$`. */
  response(): Promise<R> {
    return lastValueFrom(this.response$);
  }

  /** Collects every chunk (convenience for tests and small answers). */
  async toArray(): Promise<T[]> {
    const out: T[] = [];
    for await (const chunk of this) out.push(chunk);
    return out;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return observableIterator(this.observable);
  }
}

/**
 * Iterates an Observable: subscribes on the first `next()`, buffers values the consumer has not taken yet, and
 * unsubscribes on `return()` (a `for await` loop left early), which cancels the producer.
 */
export function observableIterator<T>(source$: Observable<T>): AsyncIterator<T> {
  const buffered: T[] = [];
  const waiting: { resolve: (r: IteratorResult<T>) => void; reject: (err: unknown) => void }[] = [];
  let subscription: Subscription | undefined;
  let finished = false;
  let failure: { error: unknown } | undefined;

  const settle = () => {
    while (waiting.length > 0) {
      const next = waiting.shift()!;
      if (buffered.length > 0) next.resolve({ value: buffered.shift()!, done: false });
      else if (failure) {
        next.reject(failure.error);
        failure = undefined;
        finished = true;
      } else if (finished) next.resolve({ value: undefined, done: true });
      else {
        waiting.unshift(next);
        return;
      }
    }
  };
  const start = () => {
    if (subscription || finished) return;
    subscription = source$.subscribe({
      next: (value) => {
        buffered.push(value);
        settle();
      },
      error: (error: unknown) => {
        failure = { error };
        settle();
      },
      complete: () => {
        finished = true;
        settle();
      },
    });
  };
  const stop = () => {
    finished = true;
    buffered.length = 0;
    failure = undefined;
    subscription?.unsubscribe();
    settle();
  };

  return {
    next: () =>
      new Promise<IteratorResult<T>>((resolve, reject) => {
        waiting.push({ resolve, reject });
        start();
        settle();
      }),
    return: (value?: unknown) => {
      stop();
      return Promise.resolve({ value: value as T, done: true });
    },
    throw: (error?: unknown) => {
      stop();
      return Promise.reject(error);
    },
  };
}
