// LlamadModule inside a host application that set up OpenTelemetry itself (its own tracer provider, registered
// globally, and its own @fastify/otel): llamad starts no SDK and its generation spans go to the host's provider, in
// the trace of the host's HTTP span (in-process, FakeBinding).
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { trace } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LlamadModule, NATIVE_BINDING } from '../../src';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';

describe('LlamadModule in a host application with its own tracer provider', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let app: NestFastifyApplication;
  let base = '';
  let dir = '';

  before(async () => {
    provider.register();
    dir = await mkdtemp(join(tmpdir(), 'llamad-host-tracing-'));
    const binding = new FakeBinding();
    @Module({
      imports: [
        LlamadModule.forRoot({
          config: { modelsDir: join(dir, 'models'), logging: false, contextLength: 512 },
          prefix: '/llm',
          providers: [{ provide: NATIVE_BINDING, useValue: () => binding }],
        }),
      ],
    })
    class HostModule {}
    const adapter = new FastifyAdapter();
    await adapter.getInstance().register(new FastifyOtelInstrumentation().plugin());
    app = await NestFactory.create<NestFastifyApplication>(HostModule, adapter, { logger: false });
    await app.listen(0, '127.0.0.1');
    const address = app.getHttpServer().address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    const gguf = join(dir, 'fake.gguf');
    await writeTinyGguf(gguf, { chatTemplate: '{{ chatml }}' });
    const res = await postJson(`${base}/llm/api/create`, { model: 'fake', from: gguf, stream: false });
    assert.equal(res.status, 200, await res.clone().text());
  });

  after(async () => {
    await app?.close();
    await provider.shutdown();
    trace.disable();
    await rm(dir, { recursive: true, force: true });
  });

  it("records the generation's spans with the host's provider, in the trace of the host's request span", async () => {
    const traceId = '5c1c63257de34c67b0f5ad2d0e1f9a11';
    const res = await postJson(
      `${base}/llm/api/chat`,
      { model: 'fake', messages: [{ role: 'user', content: 'hello' }], stream: false },
      { headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-a2fb4a1d1a96d312-01` } },
    );
    assert.equal(res.status, 200, await res.clone().text());
    await res.text();
    let spans: ReadableSpan[] = [];
    for (let i = 0; i < 100; i++) {
      spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
      if (spans.some((s) => s.name === 'chat fake:latest') && spans.some((s) => s.parentSpanContext?.isRemote)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const gen = spans.find((s) => s.name === 'chat fake:latest');
    assert.ok(gen, `the inference span in the caller's trace: ${spans.map((s) => s.name).join(', ')}`);
    // Its ancestors lead to the host's request span, the child of the caller's traceparent.
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    let node: ReadableSpan | undefined = gen;
    const chain: string[] = [];
    while (node?.parentSpanContext && byId.has(node.parentSpanContext.spanId)) {
      node = byId.get(node.parentSpanContext.spanId);
      chain.push(node!.name);
    }
    assert.equal(node?.parentSpanContext?.spanId, 'a2fb4a1d1a96d312', `chain: ${chain.join(' → ')}`);
    assert.ok(chain.length >= 1, "under the host's HTTP span");
    for (const name of ['llamad.queue', 'llamad.model.load', 'llamad.prompt', 'llamad.runner.generate']) {
      assert.ok(
        spans.some((s) => s.name === name),
        `${name} in ${spans.map((s) => s.name).join(', ')}`,
      );
    }
    assert.equal(gen.attributes['gen_ai.request.model'], 'fake:latest');
  });
});
