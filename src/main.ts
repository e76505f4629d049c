#!/usr/bin/env node
import { Logger } from '@nestjs/common';
import { createApp } from './app.factory';
import { kvCacheSettings, loadConfig } from './config';
import { ModelLoadError } from './common/errors';
import { findAddon, loadBinding } from './native';
import { startTracing } from './observability';
import { installShutdownSignals } from './operations';
import { ramCacheShareBytes } from './scheduler';
import { isLoopbackAddress } from './security';

/**
 * `npm start`: serves the Ollama-compatible API on OLLAMA_HOST (default 127.0.0.1:11434) with the model store in
 * OLLAMA_MODELS (default ~/.ollama/models).
 */
async function bootstrap(): Promise<void> {
  // A log stream whose reader went away (a pipe closed under `llamad | tee`, a supervisor that died) must neither
  // kill the daemon nor loop: unhandled, its EPIPE became an uncaught exception, whose log line failed again, and the
  // daemon spun on one core (measured: 70 % CPU for 30 min after its parent was killed). Failed log writes are dropped.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  const config = loadConfig(process.env);
  const logger = new Logger('llamad');
  // Crash-only (Node's guidance): after an uncaught exception or an unhandled rejection the process state is unknown,
  // so the daemon logs it and exits non-zero for its supervisor to restart it. Models run in runner processes
  // (LLAMAD_RUNNER=process), which exit with it (they watch their IPC channel).
  const die = (what: string, err: unknown) => {
    const error = err instanceof Error ? err : new Error(String(err));
    logger.error(`${what}: ${error.message}`, error.stack);
    process.exitCode = 1;
    // Let the log line reach its destination, then go.
    setTimeout(() => process.exit(1), 100).unref();
  };
  process.on('unhandledRejection', (reason) => die('unhandled rejection', reason));
  process.on('uncaughtException', (err) => die('uncaught exception', err));

  // Before the HTTP server exists: the OTEL_* variables may start the OpenTelemetry SDK (docs/observability.md
  // "Traces"); without them nothing is loaded or started.
  const tracing = await startTracing(config.tracing);
  const app = await createApp({ config }, { tracing });
  if (tracing.note) logger.warn(`tracing: ${tracing.note}`);
  else if (config.tracing.warning) logger.warn(`tracing: ${config.tracing.warning}`);
  if (tracing.started) logger.log(`tracing: exporting spans (${config.tracing.exporter}, ${config.tracing.protocol})`);
  // Before anything listens (and after createApp, which installs the configured log format): an addon of another
  // llamad version or ABI ends the start-up with its one line.
  checkAddon(logger);
  // SIGTERM/SIGINT: stop accepting, let requests in flight finish (LLAMAD_SHUTDOWN_TIMEOUT), unload, exit 0. SIGHUP
  // is not one of them: it re-reads the API keys file.
  installShutdownSignals(app);
  // SIGHUP never ends the daemon (Node's default action for it is to exit): with a keys file the authorizer re-reads
  // it (its own listener); without one there is nothing to reload.
  process.on('SIGHUP', () => {
    if (config.apiKeysFile === '') logger.log('SIGHUP: no API keys file to re-read (LLAMAD_API_KEYS_FILE unset)');
  });
  const host = config.listen.host === '' ? '0.0.0.0' : config.listen.host;
  await app.listen(config.listen.port, host);
  logger.log(
    `listening on ${host}:${config.listen.port} (models: ${config.modelsDir}, keep_alive: ${config.keepAliveMs} ms, ` +
      `parallel: ${config.numParallel > 0 ? config.numParallel : 'auto'})`,
  );
  // Ollama warns when OLLAMA_KV_CACHE_TYPE cannot be applied (unknown, or quantized without flash attention).
  const kv = kvCacheSettings(config);
  if (kv.warning) logger.warn(kv.warning);
  if (config.cacheRamMiB > 0) {
    const share = Math.floor(ramCacheShareBytes(config) / 2 ** 20);
    logger.log(`host-RAM prompt cache: ${config.cacheRamMiB} MiB for the daemon, ${share} MiB per loaded model`);
  }
  const keysRequired = config.apiKeys.length > 0 || config.apiKeysFile !== '';
  if (keysRequired) {
    logger.log('API keys are required on every route but /, /api/version, /health, /ready (docs/security.md)');
  }
  const boundAddress = app.getHttpServer().address();
  if (!keysRequired && typeof boundAddress === 'object' && boundAddress && !isLoopbackAddress(boundAddress.address)) {
    logger.warn(
      `listening on ${boundAddress.address}, which is not loopback, without API keys: anyone who can reach this ` +
        'port can run and change models. Set LLAMAD_API_KEYS or LLAMAD_API_KEYS_FILE (docs/security.md).',
    );
  }
}

/**
 * Says which native addon requests will load (docs/library.md "Prebuilt addons"), or that none was found, and loads
 * it now (the daemon's runners load the same file) so that an addon built for another llamad fails the start-up
 * instead of every model load (docs/native.md "Version and ABI"). An addon that cannot be loaded for another reason
 * is logged; /ready then says why, as before.
 * @throws ModelLoadError when the addon's version or ABI is not this JavaScript's (loadBinding); bootstrap's caller
 *   prints it as one line and exits with status 1
 */
function checkAddon(logger: Logger): void {
  let addon: ReturnType<typeof findAddon>;
  try {
    addon = findAddon();
  } catch (err) {
    logger.warn((err as Error).message);
    return;
  }
  if (!addon) {
    logger.warn('no native addon found: models cannot load until one is installed (`npx llamad build`)');
    return;
  }
  const from = addon.origin === 'package' ? `prebuilt package ${addon.packageName}` : addon.origin;
  logger.log(`native addon: ${addon.path} (${from}, backend ${addon.backend})`);
  try {
    loadBinding(addon);
  } catch (err) {
    if (err instanceof ModelLoadError) throw err;
    logger.error((err as Error).message);
  }
}

bootstrap().catch((err: unknown) => {
  console.error(`llamad failed to start: ${(err as Error).message}`);
  process.exit(1);
});
