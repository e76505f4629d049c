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

/** How one streamed dialect frames its values: NDJSON lines, or SSE frames (OpenAI, Anthropic). */
export interface StreamFraming<T> {
  /** Content-Type of the response, e.g. `application/x-ndjson`, `text/event-stream`. */
  contentType: string;
  /** One value as the exact text written for it (a line, an SSE frame). */
  encode(value: T): string;
  /** The dialect's last frame for an error after the first value. */
  encodeError(err: unknown): string;
  /** Written after the last value on normal completion only (OpenAI's `data: [DONE]`). */
  trailer?: string;
}

const streamLogger = new Logger('StreamResponder');

/**
 * The one place that writes streamed HTTP responses (ARCHITECTURE.md §5 step 5), for every dialect. It:
 * - takes over the reply (`reply.hijack()`) and writes status + headers on the FIRST event only, so an error before
 *   the first event rejects the returned promise and the dialect's exception filter renders a normal JSON error;
 * - writes each value as `framing.encode` says and honours backpressure: when `write()` returns false it waits for
 *   'drain' before taking the next value (values produced meanwhile queue in `concatMap`, errors and completion
 *   behind them);
 * - unsubscribes when the client closes the connection (which cancels generation and frees the slot);
 * - after headers, turns an error into the dialect's final error frame and ends the response.
 * @returns resolves when the response has ended or the client left; rejects with the source's error when it failed
 *   before its first event (nothing was written yet).
 */
export function writeStream<T>(reply: FastifyReply, source$: Observable<T>, framing: StreamFraming<T>): Promise<void> {
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
      raw.writeHead(200, { ...headers, 'content-type': framing.contentType, 'cache-control': 'no-cache' });
      raw.flushHeaders();
    };
    const write = (text: string): Promise<void> => {
      if (raw.destroyed || raw.writableEnded) return Promise.resolve();
      return raw.write(text) ? Promise.resolve() : waitForDrain(raw);
    };
    const end = () => {
      if (!raw.writableEnded) raw.end();
      finish();
    };

    const fail = (err: unknown): Promise<void> => {
      if (!started) {
        finish(err);
        return Promise.resolve();
      }
      streamLogger.warn(`stream failed after it started: ${(err as Error)?.message ?? String(err)}`);
      return write(framing.encodeError(err)).then(end);
    };
    // materialize() queues the error and completion behind the values still waiting for 'drain', so nothing
    // already produced is dropped and the error frame is always the last frame.
    const handle = (n: ObservableNotification<T>): Promise<void> => {
      switch (n.kind) {
        case 'N':
          start();
          return write(framing.encode(n.value as T));
        case 'E':
          return fail(n.error);
        case 'C':
          start();
          return (framing.trailer ? write(framing.trailer) : Promise.resolve()).then(end);
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
 * For exception filters: when the response already started (a stream is under way, so writeStream owns the error
 * frame), logs the error, ends the response if needed and returns true; returns false when nothing was sent yet and
 * the filter should render its dialect's error body.
 */
export function endStartedResponse(reply: FastifyReply, exception: unknown, logger: Logger): boolean {
  if (!reply.raw.headersSent && !reply.sent) return false;
  logger.error(`error after the response started: ${(exception as Error)?.message ?? String(exception)}`);
  if (!reply.raw.writableEnded) reply.raw.end();
  return true;
}

/** Streams native-API responses: NDJSON through writeStream, and the one-object `stream: false` form. */
@Injectable()
export class StreamResponder {
  /**
   * Streams `source$` as NDJSON (`application/x-ndjson`, reference/ollama-api.md §12.1): one JSON object per line.
   * @param encodeError builds the final line for an error after the first event (`{"error": "..."}` for Ollama).
   * @returns as writeStream.
   */
  ndjson<T>(reply: FastifyReply, source$: Observable<T>, encodeError: ErrorFrameEncoder): Promise<void> {
    return writeStream(reply, source$, {
      contentType: 'application/x-ndjson',
      encode: (value) => `${JSON.stringify(value)}\n`,
      encodeError: (err) => `${JSON.stringify(encodeError(err))}\n`,
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
