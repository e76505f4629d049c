import { type Span, SpanStatusCode } from '@opentelemetry/api';
import { ATTR_HTTP_RESPONSE_STATUS_CODE } from '@opentelemetry/semantic-conventions';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { contextOf } from '../http-observation';

/**
 * The HTTP server span's name (HTTP semantic conventions): `{method} {route}` with the route pattern
 * (`POST /v1/chat/completions`), just the method for a request that matched no route (unbounded URLs never become
 * span names).
 */
export function httpSpanName(method: string, route: string | undefined): string {
  return route ? `${method} ${route}` : method;
}

/**
 * Traces every request of a Fastify instance with @fastify/otel (Fastify's maintained OpenTelemetry plugin; it
 * patches nothing, it is registered as a plugin and uses the global tracer provider): one SERVER span per request,
 * child of the caller's W3C `traceparent` (the global propagator extracts it), named {@link httpSpanName}, with
 * `http.request.method`, `http.route`, `url.path` and `http.response.status_code`. Hook and handler child spans are
 * off (they would only split Nest's one handler into plumbing). Two additions:
 * - the span's context is kept on the request's RequestContext (`trace`), the parent of the generation spans (the
 *   request body is read between the hooks, which loses the async context);
 * - the body's `stream` (or its dialect's default) is noted on the RequestContext for `gen_ai.request.stream`;
 * - a response written by llamad's StreamResponder (a hijacked reply: no `onSend`, where the plugin ends its span and
 *   marks a 5xx as an error) gets status ERROR on a 5xx; one whose connection closed before it finished (no
 *   `onResponse` either) ends its span then, with 499.
 * Install right after the HTTP observation hooks (src/app.factory.ts) and before any route; awaits the plugin's
 * registration. Call only when a tracer provider is registered (tracing-sdk.ts), since it costs a span per request.
 */
export async function installFastifyTracing(fastify: FastifyInstance): Promise<void> {
  // Loaded here, not at start-up: a daemon without tracing never loads the instrumentation.
  const { FastifyOtelInstrumentation } = await import('@fastify/otel');
  const instrumentation = new FastifyOtelInstrumentation({
    instrumentHooks: false,
    instrumentHandler: false,
    requestHook: (span: Span, request: FastifyRequest) =>
      span.updateName(httpSpanName(request.method, request.routeOptions.url)),
  });
  // Before the plugin's own onResponse hook (which ends the span of a hijacked reply with its status code, and no error
  // status): a 5xx is an error on a server span (HTTP semantic conventions), as the plugin's onSend path does.
  fastify.addHook('onResponse', (request, reply, done) => {
    const span = request.opentelemetry?.().span;
    if (span && reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    done();
  });
  await fastify.register(instrumentation.plugin());
  fastify.addHook('onRequest', (request, reply, done) => {
    const otel = request.opentelemetry();
    const context = contextOf(request.raw);
    if (context && otel.context) context.trace = otel.context;
    const span = otel.span;
    if (span) {
      reply.raw.once('close', () => {
        // Still set only when the plugin's onSend never ran (a hijacked, streamed reply).
        if (request.opentelemetry().span !== span) return;
        const status = reply.raw.writableFinished ? reply.raw.statusCode : 499;
        span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      });
    }
    done();
  });
  fastify.addHook('preHandler', (request, _reply, done) => {
    const context = contextOf(request.raw);
    if (context?.trace) context.stream = streamRequested(request.url, request.body);
    done();
  });
}

/**
 * Whether a request body asks for a streamed reply: its boolean `stream`, else the dialect's default (Ollama's routes
 * under `/api/` stream unless told not to; the OpenAI and Anthropic routes do not).
 */
export function streamRequested(url: string, body: unknown): boolean {
  const stream = typeof body === 'object' && body !== null ? (body as { stream?: unknown }).stream : undefined;
  return typeof stream === 'boolean' ? stream : url.startsWith('/api/');
}
