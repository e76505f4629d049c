import { ProxyTracerProvider, trace } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { TracingSettings } from '../../config/otel-env';

/** The API's no-op provider: what the global proxy delegates to while nobody registered one. */
const NOOP_DELEGATE = new ProxyTracerProvider().getDelegate();

/**
 * Whether a tracer provider is registered globally (by llamad's {@link startTracing}, or by a host application or a
 * preloaded SDK such as `node --require @opentelemetry/auto-instrumentations-node/register`). Cheap (two property
 * reads): the generation hooks ask it once per generation, so spans cost nothing while nobody listens.
 */
export function tracerProviderRegistered(): boolean {
  const provider = trace.getTracerProvider();
  const delegate = provider instanceof ProxyTracerProvider ? provider.getDelegate() : provider;
  return delegate !== NOOP_DELEGATE;
}

/** What {@link startTracing} did; `shutdown` flushes and stops what it started (nothing when it started nothing). */
export interface TracingHandle {
  /**
   * Whether spans are recorded by someone: llamad's own SDK (`started`), or a tracer provider registered before (a
   * host application's, a preloaded SDK's). The daemon instruments its HTTP server only then.
   */
  active: boolean;
  /** Whether llamad started (and so owns, flushes and stops) the SDK. */
  started: boolean;
  /** Why nothing was started although the environment asked for traces, or a setting that was not applied. */
  note?: string;
  /** Exports the spans still buffered and stops the SDK llamad started (idempotent; never rejects). */
  shutdown(): Promise<void>;
}

async function exporterFor(settings: TracingSettings): Promise<SpanExporter> {
  if (settings.exporter === 'console') {
    const { ConsoleSpanExporter } = await import('@opentelemetry/sdk-trace-base');
    return new ConsoleSpanExporter();
  }
  // Both read OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS, _TIMEOUT and _COMPRESSION themselves.
  if (settings.protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter();
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter();
}

/**
 * Starts the OpenTelemetry trace SDK when `settings.enabled` (the OTEL_* variables ask for traces; config/otel-env.ts)
 * and no tracer provider is registered yet: a NodeTracerProvider with a BatchSpanProcessor (OTEL_BSP_* read by the
 * SDK) over the OTLP exporter (http/protobuf, or http/json by OTEL_EXPORTER_OTLP_PROTOCOL) or the console exporter,
 * the sampler of OTEL_TRACES_SAMPLER / _ARG (read by the SDK; default parentbased_always_on), the resource
 * `service.name` = `settings.serviceName` overridden by OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME (the SDK's
 * env detector), registered globally with the AsyncLocalStorage context manager and W3C `traceparent` (and baggage)
 * propagation. A provider registered before (a host application, a preloaded SDK) is used as it is: nothing is
 * started, and `active` is true. Must run before the HTTP server is built (src/main.ts). The SDK's modules are
 * loaded only when it starts.
 */
export async function startTracing(settings: TracingSettings): Promise<TracingHandle> {
  const done = { shutdown: () => Promise.resolve() };
  if (tracerProviderRegistered()) {
    return {
      active: true,
      started: false,
      ...done,
      ...(settings.enabled ? { note: 'a tracer provider is already registered: using it, no SDK started' } : {}),
    };
  }
  if (!settings.enabled) return { active: false, started: false, ...done };
  // The SDK is loaded only now: a daemon without tracing never loads it.
  const { defaultResource, detectResources, envDetector, resourceFromAttributes } = await import(
    '@opentelemetry/resources'
  );
  const { BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const { NodeTracerProvider } = await import('@opentelemetry/sdk-trace-node');
  const { ATTR_SERVICE_NAME } = await import('@opentelemetry/semantic-conventions');
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(await exporterFor(settings))],
  });
  provider.register();
  let stopping: Promise<void> | undefined;
  return {
    active: true,
    started: true,
    ...(settings.warning ? { note: settings.warning } : {}),
    shutdown: () =>
      (stopping ??= provider.shutdown().then(
        () => trace.disable(),
        () => trace.disable(),
      )),
  };
}
