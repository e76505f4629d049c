import assert from 'node:assert/strict';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import Fastify, { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  currentRequestContext,
  httpSpanName,
  installFastifyTracing,
  installHttpObservation,
  streamRequested,
} from '../../../../src/observability';

describe('HTTP server spans (@fastify/otel through installFastifyTracing)', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let app: FastifyInstance;
  let base = '';
  /** What each handler saw of its request context: [has a trace context, stream]. */
  const seen: Array<[boolean, boolean | undefined]> = [];

  before(async () => {
    provider.register();
    app = Fastify();
    installHttpObservation(app);
    await installFastifyTracing(app);
    app.get('/plain/:id', () => {
      const c = currentRequestContext();
      seen.push([c?.trace !== undefined, c?.stream]);
      return { ok: true };
    });
    // Written like StreamResponder: the reply is hijacked, so Fastify's onSend (where the plugin ends its span) never runs.
    app.post('/api/stream/:id', (_request, reply) => {
      const c = currentRequestContext();
      seen.push([c?.trace !== undefined, c?.stream]);
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'application/x-ndjson' });
      reply.raw.write('{"n":1}\n');
      setTimeout(() => reply.raw.end('{"n":2}\n'), 20);
    });
    app.post('/api/fail', (_request, reply) => {
      reply.hijack();
      reply.raw.writeHead(500, { 'content-type': 'application/json' });
      reply.raw.end('{"error":"boom"}');
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await app.close();
    await provider.shutdown();
    trace.disable();
  });

  it('names the span after the route pattern, honours traceparent, and keeps the context for the handler', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await fetch(`${base}/plain/42`, { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
    assert.equal(res.status, 200);
    await res.text();
    await provider.forceFlush();
    const span = exporter.getFinishedSpans().find((s) => s.spanContext().traceId === traceId);
    assert.ok(span, 'a span in the caller’s trace');
    assert.equal(span.name, 'GET /plain/:id');
    assert.equal(span.kind, 1, 'SERVER');
    assert.equal(span.parentSpanContext?.spanId, '00f067aa0ba902b7');
    assert.equal(span.attributes['http.route'], '/plain/:id');
    assert.equal(span.attributes['http.response.status_code'], 200);
    assert.deepEqual(seen.at(-1), [true, false]);
  });

  it('a hijacked (streamed) reply ends its span when the response closes', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const res = await fetch(`${base}/api/stream/1`, {
      method: 'POST',
      headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'x' }),
    });
    assert.equal(await res.text(), '{"n":1}\n{"n":2}\n');
    let span;
    for (let i = 0; i < 50 && !span; i++) {
      await new Promise((r) => setTimeout(r, 10));
      span = exporter.getFinishedSpans().find((s) => s.spanContext().traceId === traceId);
    }
    assert.ok(span, 'the span ended');
    assert.equal(span.name, 'POST /api/stream/:id');
    assert.equal(span.attributes['http.response.status_code'], 200);
    assert.deepEqual(seen.at(-1), [true, true], 'Ollama routes stream by default');
  });

  it('a hijacked 5xx reply ends its span with status ERROR', async () => {
    const traceId = '1af7651916cd43dd8448eb211c80319d';
    const res = await fetch(`${base}/api/fail`, {
      method: 'POST',
      headers: { traceparent: `00-${traceId}-c7ad6b7169203331-01` },
    });
    assert.equal(res.status, 500);
    await res.text();
    let span;
    for (let i = 0; i < 50 && !span; i++) {
      await new Promise((r) => setTimeout(r, 10));
      span = exporter.getFinishedSpans().find((s) => s.spanContext().traceId === traceId);
    }
    assert.ok(span);
    assert.equal(span.attributes['http.response.status_code'], 500);
    assert.equal(span.status.code, 2);
  });

  it('helpers: span names and the stream flag', () => {
    assert.equal(httpSpanName('GET', '/api/tags'), 'GET /api/tags');
    assert.equal(httpSpanName('GET', undefined), 'GET');
    assert.equal(streamRequested('/api/chat', {}), true);
    assert.equal(streamRequested('/api/chat', { stream: false }), false);
    assert.equal(streamRequested('/v1/chat/completions', { stream: true }), true);
    assert.equal(streamRequested('/v1/chat/completions', undefined), false);
    assert.equal(streamRequested('/v1/messages', { stream: 'yes' }), false);
  });
});
