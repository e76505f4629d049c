import { Injectable, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
import { concatMap, from, materialize, Observable, ObservableNotification, Subscription } from 'rxjs';

/** Turns an error after headers were sent into the dialect's final frame (an object written as one line). */
export type ErrorFrameEncoder = (err: unknown) => object;

/**
 * Waits until a write's data has been handed to the socket: resolves at once when `write()` returned true, on
 * 'drain' otherwise, or on 'close' (the client left; the caller then stops).
 */
function waitForDrain(raw: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.on('drain', done);
    raw.on('close', done);
  });
}

/**
 * The one place that writes streamed HTTP responses (ARCHITECTURE.md §5 step 5). For NDJSON it:
 * - takes over the reply (`reply.hijack()`) and writes status + headers on the FIRST event only, so an error before
 *   the first event rejects the returned promise and the dialect's exception filter renders a normal JSON error;
 * - writes one JSON object per line and honours backpressure: when `write()` returns false it waits for 'drain'
 *   before taking the next value (values produced meanwhile queue in `concatMap`, errors and completion behind
 *   them);
 * - unsubscribes when the client closes the connection (which cancels generation and frees the slot);
 * - after headers, turns an error into the dialect's final error line and ends the response.
 */
@Injectable()
export class StreamResponder {
  private readonly logger = new Logger(StreamResponder.name);

  /**
   * Streams `source$` as NDJSON (`application/x-ndjson`, reference/ollama-api.md §12.1).
   * @param encodeError builds the final line for an error after the first event (`{"error": "..."}` for Ollama).
   * @returns resolves when the response has ended or the client left; rejects with the source's error when it
   *   failed before its first event (nothing was written yet).
   */
  ndjson<T>(reply: FastifyReply, source$: Observable<T>, encodeError: ErrorFrameEncoder): Promise<void> {
    const raw = reply.raw;
    return new Promise<void>((resolve, reject) => {
      let started = false;
      let settled = false;

      const finish = (err?: unknown) => {
        if (settled) return;
        settled = true;
        raw.off('close', onClose);
        if (err !== undefined) reject(err);
        else resolve();
      };
      const onClose = () => {
        if (raw.writableFinished) return;
        // The client went away: cancel upstream work (the teardown chain reaches context.cancel()), and make sure
        // the half-written response does not keep its socket (and server shutdown) waiting.
        subscription.unsubscribe();
        raw.destroy();
        finish();
      };
      raw.on('close', onClose);

      const start = () => {
        if (started) return;
        started = true;
        const headers: Record<string, string | number | string[]> = {};
        for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = value;
        reply.hijack();
        raw.writeHead(200, { ...headers, 'content-type': 'application/x-ndjson', 'cache-control': 'no-cache' });
        raw.flushHeaders();
      };
      const writeLine = (value: object): Promise<void> => {
        if (raw.destroyed || raw.writableEnded) return Promise.resolve();
        const ok = raw.write(`${JSON.stringify(value)}\n`);
        return ok ? Promise.resolve() : waitForDrain(raw);
      };

      const fail = (err: unknown): Promise<void> => {
        if (!started) {
          finish(err);
          return Promise.resolve();
        }
        this.logger.warn(`stream failed after it started: ${(err as Error)?.message ?? String(err)}`);
        return writeLine(encodeError(err)).then(() => {
          if (!raw.writableEnded) raw.end();
          finish();
        });
      };
      // materialize() queues the error and completion behind the values still waiting for 'drain', so nothing
      // already produced is dropped and the error line is always the last line.
      const handle = (n: ObservableNotification<T>): Promise<void> => {
        switch (n.kind) {
          case 'N':
            start();
            return writeLine(n.value as object);
          case 'E':
            return fail(n.error);
          case 'C':
            start();
            if (!raw.writableEnded) raw.end();
            finish();
            return Promise.resolve();
        }
      };
      const subscription: Subscription = source$
        .pipe(
          materialize(),
          concatMap((n) => from(handle(n))),
        )
        .subscribe({ error: (err: unknown) => void fail(err) });
      if (settled) subscription.unsubscribe();
    });
  }

  /**
   * Sends the LAST value of `source$` as one JSON object (the `stream: false` form). The client closing the
   * connection early unsubscribes (cancelling generation). Errors reject, for the exception filter to render.
   */
  json<T>(reply: FastifyReply, source$: Observable<T>, status = 200): Promise<void> {
    const raw = reply.raw;
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      let last: T | undefined;
      let hasValue = false;
      const finish = (err?: unknown) => {
        if (settled) return;
        settled = true;
        raw.off('close', onClose);
        if (err !== undefined) reject(err);
        else resolve();
      };
      const onClose = () => {
        if (raw.writableFinished) return;
        subscription.unsubscribe();
        finish();
      };
      raw.on('close', onClose);
      const subscription: Subscription = source$.subscribe({
        next: (value) => {
          last = value;
          hasValue = true;
        },
        error: (err: unknown) => finish(err),
        complete: () => {
          if (settled) return;
          void reply
            .status(status)
            .header('content-type', 'application/json; charset=utf-8')
            .send(hasValue ? JSON.stringify(last) : '{}');
          finish();
        },
      });
      if (settled) subscription.unsubscribe();
    });
  }
}
