import { INestApplication, Logger, LoggerService } from '@nestjs/common';
import { GracefulShutdownService } from './graceful-shutdown.service';

/** Signals that shut the daemon down (SIGHUP is left alone: it re-reads the API keys file). */
export const SHUTDOWN_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

/** After the drain, how long closing the application (unloading models) may take before the process gives up, ms. */
export const CLOSE_DEADLINE_MS = 30_000;

/**
 * The daemon's signal handling (main.ts): on the first SIGTERM or SIGINT, drains ({@link GracefulShutdownService}:
 * stop accepting, let requests in flight finish up to LLAMAD_SHUTDOWN_TIMEOUT, end the rest cleanly), closes the
 * application (models unloaded) and exits 0 — 1 when closing fails or takes longer than {@link CLOSE_DEADLINE_MS}.
 * A second signal ends the grace period at once (what still runs is ended cleanly, then the same exit).
 * @param logger where its lines go (default: Nest's logger, context `Shutdown`).
 * @param exit how to end the process (tests pass a spy).
 * @returns a function that removes the signal listeners.
 */
export function installShutdownSignals(
  app: INestApplication,
  logger: LoggerService = new Logger('Shutdown'),
  exit: (code: number) => void = (code) => process.exit(code),
): () => void {
  let shutdown: Promise<void> | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    const graceful = app.get(GracefulShutdownService);
    if (shutdown) {
      logger.warn(`${signal} again: ending the requests still in flight now`);
      graceful.endNow();
      return;
    }
    logger.log(`${signal}: shutting down`);
    shutdown = (async () => {
      await graceful.drain();
      const deadline = setTimeout(() => {
        logger.error(`closing took longer than ${CLOSE_DEADLINE_MS / 1000} s; exiting`);
        exit(1);
      }, CLOSE_DEADLINE_MS);
      deadline.unref();
      await app.close();
      clearTimeout(deadline);
      logger.log('stopped');
      exit(0);
    })().catch((err: unknown) => {
      logger.error(`shutdown failed: ${err instanceof Error ? err.message : String(err)}`);
      exit(1);
    });
  };
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, onSignal);
  return () => {
    for (const signal of SHUTDOWN_SIGNALS) process.off(signal, onSignal);
  };
}
