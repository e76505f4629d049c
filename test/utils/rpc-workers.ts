// llama.cpp rpc-server workers for the RPC tests: child processes on free loopback ports.
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { freePort } from './registry-server';
import { findRpcServerPath } from '../../src/native/load-binding';

/** The vendored rpc-server built next to the addon, or null (the RPC tests then skip). */
export const RPC_SERVER = findRpcServerPath();

/** Why the RPC tests skip, or false when they can run. */
export const RPC_SKIP: string | false = RPC_SERVER
  ? false
  : 'rpc-server is not built (npm run build:native builds build/<backend>/Release/rpc-server)';

/** A loopback endpoint where no worker listens. */
export async function deadEndpoint(): Promise<string> {
  return `127.0.0.1:${await freePort()}`;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Running workers: their endpoints and processes. */
export interface RpcWorkers {
  endpoints: string[];
  children: ChildProcess[];
  /** Kills worker `i` with SIGKILL and waits for its exit. */
  kill(i: number): Promise<void>;
  /** Kills every worker still running. */
  stop(): Promise<void>;
}

async function killChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

/**
 * Starts `count` rpc-server workers (CPU, `threads` threads each) on free loopback ports and waits until each
 * accepts connections (a connection that closes at once is harmless: rpc-server goes back to accept()).
 * @throws Error when rpc-server is not built, exits, or does not listen within 10 s.
 */
export async function startRpcWorkers(count: number, threads = 1): Promise<RpcWorkers> {
  if (!RPC_SERVER) throw new Error(String(RPC_SKIP));
  const children: ChildProcess[] = [];
  const endpoints: string[] = [];
  const workers: RpcWorkers = {
    endpoints,
    children,
    kill: (i) => killChild(children[i]),
    stop: async () => {
      for (const child of children) await killChild(child);
    },
  };
  try {
    for (let i = 0; i < count; i++) {
      const port = await freePort();
      const child = spawn(RPC_SERVER, ['--host', '127.0.0.1', '--port', String(port), '--threads', String(threads)], {
        stdio: 'ignore',
      });
      children.push(child);
      const deadline = Date.now() + 10_000;
      while (!(await canConnect(port))) {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`rpc-server on ${port} exited`);
        if (Date.now() > deadline) throw new Error(`rpc-server on ${port} did not listen within 10 s`);
        await new Promise((r) => setTimeout(r, 20));
      }
      endpoints.push(`127.0.0.1:${port}`);
    }
  } catch (err) {
    await workers.stop();
    throw err;
  }
  return workers;
}
