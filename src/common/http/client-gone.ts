import type { FastifyReply } from 'fastify';

/**
 * An AbortSignal that fires when the client goes away before the response was sent: the response's 'close' event
 * without `writableFinished` (as the stream responder detects it). For JSON handlers that return their value
 * (`@Res({ passthrough: true })`): /api/embed, /api/embeddings and /v1/embeddings pass it to the embed job so that a
 * client that leaves frees the engine. The listener is removed once the response finished.
 */
export function clientGoneSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const raw = reply.raw;
  const onClose = () => {
    if (!raw.writableFinished) controller.abort();
  };
  raw.once('close', onClose);
  return controller.signal;
}
