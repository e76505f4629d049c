import type { FastifyReply } from 'fastify';
import { Observable } from 'rxjs';
import { writeStream } from '../../../common/http';
import { ResponseStreamEvent } from './responses.types';

/** One SSE frame: `event: <type>` then `data: <json>` and a blank line. */
export function encodeResponsesFrame(event: ResponseStreamEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * Writes Responses stream events as server-sent events (reference/ollama-api.md §12.6: `text/event-stream`, every
 * frame with an `event:` line equal to its data's `type`, no `[DONE]` terminator) through the common writeStream:
 * headers go out with the first event (an error before it rejects, for the exception filter to answer with a real
 * status), backpressure waits for 'drain', a client that disconnects unsubscribes (cancelling generation), and an error
 * after the start becomes one last `event: error` frame from `errorEvent`.
 * @returns resolves when the response ended or the client left; rejects with an error raised before the first event.
 */
export function writeResponsesSse(
  reply: FastifyReply,
  events$: Observable<ResponseStreamEvent>,
  errorEvent: (err: unknown) => ResponseStreamEvent,
): Promise<void> {
  return writeStream(reply, events$, {
    contentType: 'text/event-stream',
    encode: encodeResponsesFrame,
    encodeError: (err) => encodeResponsesFrame(errorEvent(err)),
  });
}
