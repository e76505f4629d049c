import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig, parseTracingEnv } from '../../../src/config';

describe('parseTracingEnv (the OTEL_* variables)', () => {
  it('an empty environment starts nothing', () => {
    const s = parseTracingEnv({});
    assert.equal(s.enabled, false);
    assert.equal(s.serviceName, 'llamad');
    assert.equal(s.captureContent, false);
    assert.equal(loadConfig({}).tracing.enabled, false);
  });

  it('an OTLP endpoint (general or for traces) turns traces on: http/protobuf by default, http/json when asked', () => {
    const general = parseTracingEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' });
    assert.deepEqual([general.enabled, general.exporter, general.protocol], [true, 'otlp', 'http/protobuf']);
    const traces = parseTracingEnv({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    assert.deepEqual([traces.enabled, traces.protocol], [true, 'http/json']);
    // The per-signal protocol wins over the general one.
    const perSignal = parseTracingEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
    });
    assert.equal(perSignal.protocol, 'http/protobuf');
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).tracing.enabled, true);
  });

  it('OTEL_TRACES_EXPORTER alone turns traces on (the default endpoint); none turns them off', () => {
    assert.equal(parseTracingEnv({ OTEL_TRACES_EXPORTER: 'otlp' }).enabled, true);
    const console = parseTracingEnv({ OTEL_TRACES_EXPORTER: 'console' });
    assert.deepEqual([console.enabled, console.exporter], [true, 'console']);
    assert.equal(
      parseTracingEnv({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' }).enabled,
      false,
    );
    assert.equal(parseTracingEnv({ OTEL_TRACES_EXPORTER: 'zipkin,console' }).exporter, 'console');
  });

  it('OTEL_SDK_DISABLED=true wins over everything', () => {
    const s = parseTracingEnv({ OTEL_SDK_DISABLED: 'TRUE', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' });
    assert.equal(s.enabled, false);
    assert.equal(parseTracingEnv({ OTEL_SDK_DISABLED: 'false', OTEL_TRACES_EXPORTER: 'otlp' }).enabled, true);
  });

  it('what cannot be exported is refused with a warning, not guessed', () => {
    const grpc = parseTracingEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    assert.equal(grpc.enabled, false);
    assert.match(grpc.warning ?? '', /grpc is not supported/);
    const zipkin = parseTracingEnv({ OTEL_TRACES_EXPORTER: 'zipkin' });
    assert.equal(zipkin.enabled, false);
    assert.match(zipkin.warning ?? '', /zipkin is not supported/);
    const odd = parseTracingEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'carrier-pigeon',
    });
    assert.deepEqual([odd.enabled, odd.protocol], [true, 'http/protobuf']);
    assert.match(odd.warning ?? '', /unknown/);
  });

  it('OTEL_SERVICE_NAME and the GenAI content opt-in', () => {
    const s = parseTracingEnv({
      OTEL_SERVICE_NAME: 'inference-eu',
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'True',
    });
    assert.equal(s.serviceName, 'inference-eu');
    assert.equal(s.captureContent, true);
    assert.equal(parseTracingEnv({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: '1' }).captureContent, false);
  });
});
