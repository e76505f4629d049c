import { spawn } from 'node:child_process';
import { isIP } from 'node:net';
import { findRpcServerPath } from '../native/load-binding';
import { CliError } from './errors';

/** Options of `llamad rpc-worker`. */
export interface RpcWorkerOptions {
  host: string;
  port: string;
  threads?: string;
}

/** The rpc-server arguments for the options (validated: port 1..65535, threads ≥ 1). */
export function rpcWorkerArgs(o: RpcWorkerOptions): string[] {
  const port = Number(o.port);
  if (!/^\d+$/.test(o.port) || port < 1 || port > 65535) throw new CliError(`invalid port '${o.port}'`);
  if (o.host.trim() === '' || o.host.includes(':')) {
    throw new CliError(`invalid host '${o.host}': an IPv4 address or host name (ggml's RPC speaks IPv4 only)`);
  }
  const args = ['--host', o.host, '--port', String(port)];
  if (o.threads !== undefined) {
    if (!/^\d+$/.test(o.threads) || Number(o.threads) < 1) throw new CliError(`invalid thread count '${o.threads}'`);
    args.push('--threads', o.threads);
  }
  return args;
}

/** Whether `host` is a loopback address or name (the only bind that no other machine reaches). */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || (isIP(host) === 4 && host.startsWith('127.'));
}

/**
 * `llamad rpc-worker`: runs the vendored llama.cpp rpc-server in the foreground (a worker that holds layers of a
 * model served by a daemon on another machine: LLAMAD_RPC_SERVERS / PARAMETER rpc there). Signals are passed on;
 * the exit code is the server's.
 * @throws CliError when rpc-server was not built, or for invalid options.
 */
export async function rpcWorkerCommand(o: RpcWorkerOptions): Promise<number> {
  const args = rpcWorkerArgs(o);
  const binary = findRpcServerPath();
  if (!binary) {
    throw new CliError(
      'rpc-server is not built: `npm run build:native` (part of `npm install`) builds it next to the addon, in ' +
        'build/<backend>/Release/rpc-server; or set LLAMAD_RPC_SERVER to an rpc-server binary of the same llama.cpp',
    );
  }
  if (!isLoopbackHost(o.host)) {
    process.stderr.write(
      `warning: rpc-worker listens on ${o.host}: the RPC protocol has no authentication and no encryption, and the ` +
        'worker runs whatever it is sent. Bind it to a private network only, never a public interface ' +
        '(docs/security.md).\n',
    );
  }
  process.stderr.write(`rpc-worker: ${binary} ${args.join(' ')}\n`);
  const child = spawn(binary, args, { stdio: 'inherit' });
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
  const onInt = forward('SIGINT');
  const onTerm = forward('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  try {
    return await new Promise<number>((resolve, reject) => {
      child.once('error', (err) => reject(new CliError(`cannot start ${binary}: ${err.message}`)));
      child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 + signalNumber(signal) : 1)));
    });
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  }
}

function signalNumber(signal: NodeJS.Signals): number {
  return signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : signal === 'SIGKILL' ? 9 : 1;
}
