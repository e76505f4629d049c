import { Logger } from '@nestjs/common';
import { createApp } from './app.factory';
import { loadConfig } from './config';

/**
 * `npm start`: serves the Ollama-compatible API on OLLAMA_HOST (default 127.0.0.1:11434) with the model store in
 * OLLAMA_MODELS (default ~/.ollama/models).
 */
async function bootstrap(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = new Logger('llamad');
  // A bug in a callback outside a request (a timer, a native event) must not take the daemon down.
  process.on('unhandledRejection', (reason) => logger.error(`unhandled rejection: ${String(reason)}`));
  process.on('uncaughtException', (err) => logger.error(`uncaught exception: ${err.message}`, err.stack));

  const app = await createApp({ config });
  const host = config.listen.host === '' ? '0.0.0.0' : config.listen.host;
  await app.listen(config.listen.port, host);
  logger.log(
    `listening on ${host}:${config.listen.port} (models: ${config.modelsDir}, keep_alive: ${config.keepAliveMs} ms, ` +
      `parallel: ${config.numParallel})`,
  );
}

bootstrap().catch((err: unknown) => {
  console.error(`llamad failed to start: ${(err as Error).message}`);
  process.exit(1);
});
