import assert from 'node:assert/strict';
import { trace } from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { afterEach, describe, it } from 'node:test';
import { parseTracingEnv } from '../../../../src/config';
import { startTracing, tracerProviderRegistered } from '../../../../src/observability';

describe('startTracing', () => {
  afterEach(() => trace.disable());

  it('without OTEL_* variables starts nothing and registers nothing', async () => {
    const handle = await startTracing(parseTracingEnv({}));
    assert.deepEqual([handle.active, handle.started, handle.note], [false, false, undefined]);
    assert.equal(tracerProviderRegistered(), false);
    await handle.shutdown();
  });

  it('with them: registers a provider globally, and shutdown() flushes and unregisters it', async () => {
    const handle = await startTracing(parseTracingEnv({ OTEL_TRACES_EXPORTER: 'console' }));
    assert.deepEqual([handle.active, handle.started], [true, true]);
    assert.equal(tracerProviderRegistered(), true);
    const span = trace.getTracer('t').startSpan('x');
    assert.equal(span.isRecording(), true);
    await handle.shutdown();
    await handle.shutdown(); // idempotent
    assert.equal(tracerProviderRegistered(), false);
  });

  it("a provider registered before (a host's, a preloaded SDK's) is used: nothing started", async () => {
    const host = new NodeTracerProvider();
    host.register();
    const handle = await startTracing(parseTracingEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }));
    assert.deepEqual([handle.active, handle.started], [true, false]);
    assert.match(handle.note ?? '', /already registered/);
    await handle.shutdown();
    assert.equal(tracerProviderRegistered(), true, "the host's provider is left alone");
    await host.shutdown();
  });
});
