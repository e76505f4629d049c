/*
 * The tracing settings of the daemon's environment (issue 36 item 1): whether the standard OpenTelemetry variables ask
 * for traces, and the few choices llamad makes itself. Parsed by loadConfig (daemon-config.ts) into
 * DaemonConfig.tracing. The OpenTelemetry SDK reads the rest of the OTEL_* variables on its own (exporter endpoint,
 * headers, timeout, sampler and its argument, batch processor, resource attributes): llamad does not copy them.
 * Variables and defaults: opentelemetry-specification "SDK environment variables" and "OTLP exporter"
 * (shared/reference/shared-service.md §3).
 */

/** The service name traces carry when neither OTEL_SERVICE_NAME nor `service.name` in OTEL_RESOURCE_ATTRIBUTES is set. */
export const DEFAULT_TRACING_SERVICE_NAME = 'llamad';

/** The OTLP encodings llamad can export with (`grpc` needs an exporter that is not installed). */
export type OtlpTracesProtocol = 'http/protobuf' | 'http/json';

/** What the daemon does about traces, from the environment. */
export interface TracingSettings {
  /**
   * Whether the daemon starts an OpenTelemetry SDK: OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
   * OTEL_TRACES_EXPORTER (not `none`) is set, OTEL_TRACES_EXPORTER is not `none`, and OTEL_SDK_DISABLED is not
   * `true`. False: no SDK, spans are the API's no-ops (a host application's own tracer provider is still used).
   */
  enabled: boolean;
  /** `otlp` (the default) or `console` (spans printed on stdout, for a look without a collector). */
  exporter: 'otlp' | 'console';
  /**
   * OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else `http/protobuf` (the specification's
   * default).
   */
  protocol: OtlpTracesProtocol;
  /** OTEL_SERVICE_NAME, else {@link DEFAULT_TRACING_SERVICE_NAME} (a `service.name` resource attribute wins over it). */
  serviceName: string;
  /**
   * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: spans carry the prompt messages and the reply text
   * (`gen_ai.input.messages`, `gen_ai.output.messages`; they may hold personal data). Default false: no text.
   */
  captureContent: boolean;
  /** Why a setting was not applied (an unsupported exporter or protocol), for one warning at start-up. */
  warning?: string;
}

/** Tracing off: what an empty environment gives. */
export function tracingDisabled(): TracingSettings {
  return {
    enabled: false,
    exporter: 'otlp',
    protocol: 'http/protobuf',
    serviceName: DEFAULT_TRACING_SERVICE_NAME,
    captureContent: false,
  };
}

function value(env: NodeJS.ProcessEnv, key: string): string {
  return (env[key] ?? '').trim();
}

/**
 * The {@link TracingSettings} of an environment. An exporter other than `otlp`/`console`/`none` or the `grpc`
 * protocol turns tracing off with a warning (their exporters are not installed); an unknown protocol is
 * `http/protobuf` with a warning.
 */
export function parseTracingEnv(env: NodeJS.ProcessEnv): TracingSettings {
  const settings = tracingDisabled();
  settings.serviceName = value(env, 'OTEL_SERVICE_NAME') || DEFAULT_TRACING_SERVICE_NAME;
  settings.captureContent = value(env, 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT').toLowerCase() === 'true';
  if (value(env, 'OTEL_SDK_DISABLED').toLowerCase() === 'true') return settings;
  const exporter = value(env, 'OTEL_TRACES_EXPORTER').toLowerCase();
  const endpoint = value(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') || value(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (exporter === 'none' || (exporter === '' && endpoint === '')) return settings;
  // OTEL_TRACES_EXPORTER may list several; the first one llamad knows is used.
  const names = exporter === '' ? ['otlp'] : exporter.split(',').map((s) => s.trim());
  const known = names.find((n): n is 'otlp' | 'console' => n === 'otlp' || n === 'console');
  if (!known) {
    settings.warning = `OTEL_TRACES_EXPORTER=${exporter} is not supported (otlp, console, none): no traces`;
    return settings;
  }
  settings.exporter = known;
  const protocol = (
    value(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') || value(env, 'OTEL_EXPORTER_OTLP_PROTOCOL')
  ).toLowerCase();
  if (protocol === 'grpc' && known === 'otlp') {
    settings.warning = 'OTLP over grpc is not supported (use http/protobuf or http/json): no traces';
    return settings;
  }
  if (protocol === 'http/json') settings.protocol = 'http/json';
  else if (protocol !== '' && protocol !== 'http/protobuf' && protocol !== 'grpc') {
    settings.warning = `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is unknown: using http/protobuf`;
  }
  settings.enabled = true;
  return settings;
}
