import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/config';
import { freePort } from './registry-server';

/** The daemon as a subprocess (`node dist/src/main.js`) on a loopback port, with its stdout lines and its exit. */
export interface DaemonProcess {
  child: ChildProcess;
  port: number;
  /** `http://127.0.0.1:<port>`. */
  base: string;
  /** Its log lines (JSON), as they arrive. */
  lines: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL unless it has exited (its runner processes follow: they watch their IPC channel); safe to call twice. */
  kill(): Promise<void>;
}

/**
 * Starts `node dist/src/main.js` with OLLAMA_HOST on a free loopback port and OLLAMA_MODELS = `store` (plus `env`),
 * and waits until GET /health answers (at most 30 s).
 * @throws Error with the end of its stderr when it exits or does not answer in time.
 */
export async function spawnDaemon(store: string, env: Record<string, string> = {}): Promise<DaemonProcess> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [join(REPO_ROOT, 'dist', 'src', 'main.js')], {
    env: { ...process.env, OLLAMA_HOST: `127.0.0.1:${port}`, OLLAMA_MODELS: store, OLLAMA_DEBUG: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (data: string) => {
    const parts = (partial + data).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts.filter((l) => l !== ''));
  });
  child.stderr!.setEncoding('utf8').on('data', (data: string) => (stderr = (stderr + data).slice(-4000)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await exited;
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    const up = await fetch(`${base}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      await kill();
      throw new Error(`the daemon did not start: ${stderr}${lines.slice(-20).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, port, base, lines, exited, kill };
}
