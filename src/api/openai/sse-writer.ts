import type { FastifyReply } from 'fastify';
import { Observable } from 'rxjs';
import { writeStream } from '../../common/http';

/**
 * Writes an Observable as OpenAI-style server-sent events (reference/ollama-api.md §12.2 streaming;
 * clients.md §1.2): `text/event-stream`, one `data: <json>\n\n` frame per value, `data: [DONE]\n\n` at the end, no
 * `event:` lines. The common writeStream does the rest: status and headers go out with the FIRST value, so an error
 * before it rejects the promise and the exception filter answers with a real status; after it, the error becomes
 * one `data: {"error":…}` frame and the response ends (without `[DONE]`); backpressure and client disconnects as for
 * NDJSON.
 */
export function writeSse<T extends object>(
  reply: FastifyReply,
  source$: Observable<T>,
  encodeError: (err: unknown) => object,
): Promise<void> {
  return writeStream(reply, source$, {
    contentType: 'text/event-stream',
    encode: (value) => `data: ${JSON.stringify(value)}\n\n`,
    encodeError: (err) => `data: ${JSON.stringify(encodeError(err))}\n\n`,
    trailer: 'data: [DONE]\n\n',
  });
}
