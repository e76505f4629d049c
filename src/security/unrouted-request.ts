import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { contextOf, requestContextStorage } from '../observability';
import { answerWithoutReadingBody } from './unread-body';

/** Ollama's answer to a path no route serves (gin's default; reference/ollama-api.md §1.1), the last resort here. */
const NOT_FOUND_TEXT = '404 page not found';

/** Options of {@link installUnroutedAnswer}. */
export interface UnroutedAnswerOptions {
  /**
   * Which unmatched requests are answered early, from their path (query string removed) and the request; default all
   * (the daemon). LlamadModule in a host application passes "under the module's paths", so the host's own unmatched
   * paths keep the host's full lifecycle.
   */
  applies?: (path: string, request: FastifyRequest) => boolean;
}

/**
 * Answers a request that matched no route — an unknown path (404) or a known path with another method (405) —
 * from a Fastify `onRequest` hook, before any byte of its body is read or parsed (issue 32; docs/security.md "Order
 * of checks"). Without it Fastify sends such requests through its 404 route's full lifecycle: the content-type parser
 * reads and parses the whole body (up to the body limit, 100 MB) before the not-found handler answers, for any client,
 * unauthenticated.
 *
 * The answer is the application's own not-found handler (Nest's, which throws `Cannot <METHOD> <path>` into the
 * route's exception filter: for the daemon OllamaExceptionFilter's `404 page not found` / `405 method not allowed`,
 * text/plain, as Ollama's gin), called here instead of after body parsing, inside the request's RequestContext. So the
 * status and body are exactly what they were; only the body is never read.
 *
 * A request that announces a body (Content-Length > 0 or chunked) is answered with `Connection: close` and its body
 * is not read beyond a small cap ({@link answerWithoutReadingBody}): that is Fastify's own way for a body it will not
 * read (its 413 for an oversized Content-Length); draining it all instead would make the daemon receive the 50 MB
 * the answer is meant to spare it, since a keep-alive connection cannot be reused without reading them.
 * Install after the Origin/Host gate (a refused origin stays 403) and before anything that reads the body.
 */
export function installUnroutedAnswer(fastify: FastifyInstance, options: UnroutedAnswerOptions = {}): void {
  fastify.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.routeOptions.url !== undefined) return;
    if (options.applies && !options.applies(request.url.split('?')[0], request)) return;
    answerWithoutReadingBody(request, reply);
    const handler = request.routeOptions.handler as
      | ((this: FastifyInstance, req: FastifyRequest, rep: FastifyReply) => unknown)
      | undefined;
    const run = (): unknown => (handler ? handler.call(fastify, request, reply) : undefined);
    const context = contextOf(request.raw);
    const result: unknown = await (context ? requestContextStorage.run(context, run) : run());
    if (!reply.sent) {
      // A handler that returns its answer instead of sending it (Fastify's async style).
      if (result !== undefined && result !== reply) void reply.send(result);
      else void reply.code(404).type('text/plain').send(NOT_FOUND_TEXT);
    }
    return reply;
  });
}
