import type { FastifyReply } from 'fastify';
import { Observable } from 'rxjs';
import { writeStream } from '../../common/http';
import { encodeSseFrame } from './anthropic-stream.converter';
import { SseFrame } from './anthropic.types';

/**
 * Writes Anthropic SSE frames (`text/event-stream`, every frame with an `event:` line, reference/ollama-api.md §12.8)
 * through the common writeStream: headers on the first frame only (an error before it rejects, for the exception
 * filter), backpressure via 'drain', the client closing the connection unsubscribes (cancelling generation), an error
 * after the start becomes one last frame from `errorFrame` (`event: error`).
 * @returns resolves when the response ended or the client left; rejects with an error raised before the first frame.
 */
export function streamSse(
  reply: FastifyReply,
  frames$: Observable<SseFrame>,
  errorFrame: (err: unknown) => SseFrame,
): Promise<void> {
  return writeStream(reply, frames$, {
    contentType: 'text/event-stream',
    encode: encodeSseFrame,
    encodeError: (err) => encodeSseFrame(errorFrame(err)),
  });
}
