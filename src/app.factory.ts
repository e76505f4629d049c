import { LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule, AppOptions } from './app.module';
import { installJsonBodyParser } from './common/http';
import { installRequestGate } from './security';

/** Largest request body, bytes (images arrive base64-encoded inside JSON). */
export const BODY_LIMIT_BYTES = 100 * 1024 * 1024;

/** Nest log levels for an OLLAMA_DEBUG level (0 = info, 1 = debug, 2 = verbose). */
export function logLevels(debugLevel: number): LogLevel[] {
  const levels: LogLevel[] = ['fatal', 'error', 'warn', 'log'];
  if (debugLevel >= 1) levels.push('debug');
  if (debugLevel >= 2) levels.push('verbose');
  return levels;
}

/**
 * Builds the Nest application on Fastify with the daemon's HTTP conventions (reference/ollama-api.md §1.1): the
 * Origin/Host request gate first on every route (§1.2, §1.3; docs/security.md), every body parsed as JSON whatever
 * its content type (nesting depth limited), trailing slashes ignored, shutdown hooks (runners are closed on
 * SIGINT/SIGTERM). Shared by main.ts and the e2e tests; the caller listens.
 */
export async function createApp(options: AppOptions): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    ignoreTrailingSlash: true,
    // Shutdown must not wait for keep-alive sockets (a client may hold an unused one open for minutes).
    forceCloseConnections: true,
  });
  installRequestGate(adapter.getInstance(), { origins: options.config.origins });
  installJsonBodyParser(adapter.getInstance(), BODY_LIMIT_BYTES);
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(options), adapter, {
    logger: options.config.logging ? logLevels(options.config.debugLevel) : false,
    bodyParser: false,
  });
  // SIGINT and SIGTERM only: Nest's default list includes SIGHUP, which re-reads the API keys file instead.
  app.enableShutdownHooks(['SIGINT', 'SIGTERM']);
  await app.init();
  return app;
}
