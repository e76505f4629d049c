import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NativeBinding } from '../../binding';
import { createApp } from '../../src/app.factory';
import { DaemonConfig } from '../../src/config';
import type { RunnerFactory } from '../../src/runner';

/** A running daemon for e2e tests. */
export interface TestApp {
  app: NestFastifyApplication;
  /** `http://127.0.0.1:<port>`. */
  baseUrl: string;
  /** The temporary OLLAMA_MODELS directory (removed by close()). */
  modelsDir: string;
  config: DaemonConfig;
  /** Closes the app (unloading runners) and removes the temporary store. */
  close(): Promise<void>;
}

/** Options of createTestApp. */
export interface TestAppOptions {
  /** A binding to use instead of the compiled addon (FakeBinding); omit for the real addon. */
  binding?: NativeBinding;
  runnerFactory?: RunnerFactory;
  /** Changes to the default test configuration (temp store, quiet logs, 1 slot, 5 m keep-alive). */
  config?: Partial<DaemonConfig>;
  /** Address to bind (default 127.0.0.1); `baseUrl` still points at 127.0.0.1. */
  listenHost?: string;
  /** Captures the daemon's JSON log lines (logging is on for this app then, at `config.logLevel`). */
  logDestination?: { write(line: string): void };
}

/**
 * Boots the real Nest app on 127.0.0.1 port 0 with a fresh temporary OLLAMA_MODELS — the same createApp() as
 * main.ts — so tests drive it over real HTTP (raw fetch or the official `ollama` client).
 */
export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const modelsDir = await mkdtemp(join(tmpdir(), 'llamad-e2e-'));
  const config = Object.assign(new DaemonConfig(), {
    modelsDir,
    logging: process.env.LLAMAD_TEST_LOGS === '1',
    contextLength: 512,
    ...options.config,
  });
  const app = await createApp(
    { config, binding: options.binding, runnerFactory: options.runnerFactory },
    options.logDestination ? { logDestination: options.logDestination } : {},
  );
  await app.listen(0, options.listenHost ?? '127.0.0.1');
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    app,
    baseUrl: `http://127.0.0.1:${port}`,
    modelsDir,
    config,
    close: async () => {
      await app.close();
      await rm(modelsDir, { recursive: true, force: true });
    },
  };
}
