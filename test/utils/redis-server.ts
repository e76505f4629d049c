import { ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { missingPrograms } from './programs';
import { freePort } from './registry-server';

/** A running Debian `redis-server` on loopback, without persistence. */
export interface RedisServer {
  /** `redis://127.0.0.1:<port>` (LLAMAD_REDIS_URL). */
  url: string;
  port: number;
  /** Stops the process (SIGTERM, waits for its exit); safe to call twice. */
  stop(): Promise<void>;
}

/** Why the Redis tests cannot run here: undefined when `redis-server` is on $PATH, else the install command. */
export function redisMissing(): string | undefined {
  return missingPrograms('redis-server');
}

/** Whether something answers `PING` with `+PONG` on 127.0.0.1:`port`. */
function pings(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    socket.setTimeout(1000, () => socket.destroy());
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d: Buffer) => {
      reply += d.toString();
      if (reply.includes('\r\n')) socket.end();
    });
    socket.on('error', () => resolve(false));
    socket.on('close', () => resolve(reply.startsWith('+PONG')));
  });
}

/**
 * Starts `redis-server --port <free port> --bind 127.0.0.1 --save '' --appendonly no` and waits until it answers
 * PING. Tests that call it skip with {@link redisMissing} as their reason (CI installs it through .ci/run).
 * @param port a port to use (a restart on the same address); default a free one.
 * @throws Error with the install command when redis-server is missing, or when it does not come up in 10 s.
 */
export async function startRedis(port?: number): Promise<RedisServer> {
  const missing = redisMissing();
  if (missing) throw new Error(missing);
  const p = port ?? (await freePort());
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  const deadline = Date.now() + 10_000;
  while (!(await pings(p))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server did not start: ${stderr.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `redis://127.0.0.1:${p}`, port: p, stop };
}
