import { AsyncLocalStorage } from 'node:async_hooks';
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

/** Whether the current request's client has gone (entered around each handler by the HTTP observation hook). */
const clientGoneChecks = new AsyncLocalStorage<() => boolean>();

/**
 * Runs `fn` (a request's handler chain: Nest's guards, pipes and handler) with `gone` as the current request's
 * "has the client gone?" check, read by {@link currentClientGone} from anything `fn` starts (the validation pipe
 * stops validating a large body in slices once it turns true).
 * @param gone true once the client closed the connection before its response was sent.
 */
export function runWithClientGone<T>(gone: () => boolean, fn: () => T): T {
  return clientGoneChecks.run(gone, fn);
}

/** Whether the current request's client has gone; false outside a request entered by {@link runWithClientGone}. */
export function currentClientGone(): boolean {
  return clientGoneChecks.getStore()?.() ?? false;
}
