import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule, AppOptions } from './app.module';
import { installJsonBodyParser } from './common/http';
import {
  createHttpLogger,
  createNestLogger,
  createRootLogger,
  fastifyRequestIdOptions,
  installFastifyTracing,
  installHttpObservation,
  TracingHandle,
} from './observability';
import { setupOpenApi } from './openapi';
import { installRequestGate, installUnroutedAnswer } from './security';

/** Largest request body, bytes (images arrive base64-encoded inside JSON). */
export const BODY_LIMIT_BYTES = 100 * 1024 * 1024;

/** What createApp takes besides the module's options. */
export interface CreateAppExtras {
  /** Where the JSON log lines go instead of stdout (tests capture them); logs even when `config.logging` is false. */
  logDestination?: { write(line: string): void };
  /**
   * The process's tracing (main.ts: startTracing from the OTEL_* variables): when `active`, every request gets an HTTP
   * server span (observability/tracing/fastify-tracing.ts) and closing the application flushes and stops the SDK.
   */
  tracing?: TracingHandle;
}

/**
 * Builds the Nest application on Fastify with the daemon's HTTP conventions (reference/ollama-api.md §1.1): request
 * ids, metrics and one structured log line per request on every route (src/observability, before anything else), the
 * Origin/Host request gate first among the checks on every route (§1.2, §1.3; docs/security.md), a request that
 * matches no route answered 404/405 before its body is read, every body parsed as
 * JSON whatever its content type (nesting depth limited), trailing slashes ignored, Nest's logs through pino (JSON
 * lines, pretty on a terminal, LLAMAD_LOG_LEVEL; silent when `config.logging` is false), an OpenTelemetry span per
 * request when `extras.tracing` is active. Signals are main.ts's
 * (installShutdownSignals: drain, close, exit 0); `app.close()` unloads the models. Shared by main.ts and the e2e
 * tests; the caller listens.
 */
export async function createApp(options: AppOptions, extras: CreateAppExtras = {}): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    // One request id: Fastify's request.id honours a sane x-request-id (observability/http-observation.ts).
    ...fastifyRequestIdOptions(),
    bodyLimit: BODY_LIMIT_BYTES,
    ignoreTrailingSlash: true,
    // Shutdown must not wait for keep-alive sockets (a client may hold an unused one open for minutes).
    forceCloseConnections: true,
  });
  const logging = options.config.logging || extras.logDestination !== undefined;
  const rootLogger = logging
    ? createRootLogger({
        level: options.config.logLevel,
        pretty: process.stdout.isTTY === true,
        ...(extras.logDestination ? { destination: extras.logDestination } : {}),
      })
    : undefined;
  installHttpObservation(adapter.getInstance(), rootLogger ? { logger: createHttpLogger(rootLogger) } : {});
  const tracing = extras.tracing;
  if (tracing?.active) {
    await installFastifyTracing(adapter.getInstance());
    // The last hook of app.close() (after the models are unloaded and the requests ended): spans still buffered go out.
    adapter.getInstance().addHook('onClose', () => tracing.shutdown());
  }
  installRequestGate(adapter.getInstance(), { origins: options.config.origins });
  // Unknown routes and wrong methods: 404/405 before the body is read (src/security/unrouted-request.ts).
  installUnroutedAnswer(adapter.getInstance());
  installJsonBodyParser(adapter.getInstance(), {
    bodyLimit: BODY_LIMIT_BYTES,
    managementBodyLimit: options.config.managementBodyLimit,
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(options), adapter, {
    ...(rootLogger ? { bufferLogs: true } : { logger: false }),
    bodyParser: false,
  });
  if (rootLogger) app.useLogger(createNestLogger(rootLogger));
  setupOpenApi(app); // GET /openapi.json and /docs (src/openapi)
  await app.init();
  return app;
}
