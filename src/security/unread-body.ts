import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Socket } from 'node:net';

/** Most body bytes read (and thrown away) from a request answered without its body, bytes. */
export const UNREAD_BODY_DRAIN_BYTES = 256 * 1024;

/**
 * How long the connection of a request answered without its body stays half-open after the answer, ms: time for
 * the client to read the answer before the close (a close with unread data sends a TCP reset, which can make the
 * client lose an answer it has not read yet).
 */
export const UNREAD_BODY_LINGER_MS = 2000;

/** Whether the request announces a body (Content-Length > 0 or chunked). */
export function hasUnreadBody(request: FastifyRequest): boolean {
  const length = Number(request.headers['content-length'] ?? 0);
  return length > 0 || request.headers['transfer-encoding'] !== undefined;
}

/**
 * Prepares the answer to a request whose body will not be read (a 401, a 404/405 from an `onRequest` hook): when
 * it announces a body, the answer carries `Connection: close` — Fastify's own way for a body it will not read (its
 * 413 for an oversized Content-Length) — and the body is never read beyond {@link UNREAD_BODY_DRAIN_BYTES} (thrown
 * away as it comes; past that, backpressure stops reading the socket: the client's sends block, nothing is buffered
 * here). Once the answer is written the connection is half-closed and destroyed after {@link UNREAD_BODY_LINGER_MS}
 * (or at once when the body had ended), a bounded form of the lingering close of nginx and Apache, so the client
 * reads the answer before the socket goes. A request without a body is left alone (its connection stays alive).
 * Call before sending the answer.
 */
export function answerWithoutReadingBody(request: FastifyRequest, reply: FastifyReply): void {
  if (!hasUnreadBody(request)) return;
  void reply.header('connection', 'close');
  const req = request.raw;
  let drained = 0;
  const discard = (chunk: Buffer | string) => {
    drained += chunk.length;
    if (drained < UNREAD_BODY_DRAIN_BYTES) return;
    req.removeListener('data', discard);
    req.pause();
  };
  req.on('data', discard);
  // Node's HTTP server ends a `Connection: close` response's socket with destroySoon() (end, destroy once written);
  // this socket lingers instead.
  const socket = req.socket as Socket & { destroySoon?: () => void };
  socket.destroySoon = function lingerThenDestroy(this: Socket): void {
    if (this.writable) this.end();
    if (req.complete) {
      this.destroy();
      return;
    }
    const timer = setTimeout(() => this.destroy(), UNREAD_BODY_LINGER_MS);
    timer.unref();
    this.once('close', () => clearTimeout(timer));
    req.once('end', () => this.destroy());
  };
}
