/**
 * The two servers `npm run bench` compares, started as child processes on loopback: the daemon (dist/src/main.js)
 * and llama.cpp's llama-server built from the same vendored tree (scripts/build-llama-server.mjs).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readdirSync, readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { performance } from 'node:perf_hooks';

/** A started server: its base URL, process and start time (ms, performance.now()). */
export interface RunningServer {
  readonly name: string;
  readonly base: string;
  readonly child: ChildProcess;
  readonly spawnedAt: number;
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

function spawnLogged(name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv, log: string): ChildProcess {
  const out = createWriteStream(log, { flags: 'a' });
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  child.once('error', (err) => out.write(`${name}: ${err.message}\n`));
  return child;
}

/**
 * Polls `url` until it answers 200 (llama-server's /health answers 503 while loading).
 * @throws Error when the process exits or `timeoutMs` passes first.
 */
async function waitReady(server: RunningServer, url: string, timeoutMs: number, log: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      throw new Error(`${server.name} exited (${server.child.exitCode ?? server.child.signalCode}); see ${log}`);
    }
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${server.name} did not become ready in ${timeoutMs} ms; see ${log}`);
}

/** Options of a daemon instance. */
export interface DaemonOptions {
  mainJs: string;
  modelsDir: string;
  /** OLLAMA_NUM_PARALLEL; 0 leaves it unset (the daemon's default: 4 slots sharing one num_ctx). */
  numParallel: number;
  threads: number;
  log: string;
  /** Extra environment (e.g. LLAMAD_RUNNER). */
  env?: Record<string, string>;
}

/**
 * Starts the daemon with OLLAMA_NUM_PARALLEL, LLAMAD_THREADS and its own model store; resolves when GET / answers.
 * @throws Error when it exits or does not answer within 60 s.
 */
export async function startDaemon(opts: DaemonOptions): Promise<RunningServer> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    OLLAMA_HOST: `127.0.0.1:${port}`,
    OLLAMA_MODELS: opts.modelsDir,
    OLLAMA_NUM_PARALLEL: String(opts.numParallel),
    OLLAMA_KEEP_ALIVE: '30m',
    LLAMAD_THREADS: String(opts.threads),
    ...opts.env,
  };
  if (opts.numParallel <= 0) delete env.OLLAMA_NUM_PARALLEL;
  const spawnedAt = performance.now();
  const child = spawnLogged('daemon', process.execPath, [opts.mainJs], env, opts.log);
  const server = { name: 'daemon', base: `http://127.0.0.1:${port}`, child, spawnedAt };
  await waitReady(server, `${server.base}/`, 60_000, opts.log);
  return server;
}

/** Options of a llama-server instance. */
export interface LlamaServerOptions {
  bin: string;
  model: string;
  /** Total context (tokens): slot context × slots. */
  ctx: number;
  /** -np; -1 is llama-server's auto mode (4 slots over a unified cache of `ctx`). */
  slots: number;
  threads: number;
  batch: number;
  ubatch: number;
  /** Layers to offload (-ngl); 0 on the CPU backend. */
  gpuLayers: number;
  embeddings?: boolean;
  /** More arguments (e.g. speculative decoding's), appended. */
  extra?: string[];
  log: string;
}

/** The llama-server command line for `opts` (without --port), as printed in docs/benchmarks.md. */
export function llamaServerArgs(opts: LlamaServerOptions): string[] {
  return [
    '-m',
    opts.model,
    '-c',
    String(opts.ctx),
    '-np',
    String(opts.slots),
    '-t',
    String(opts.threads),
    '-tb',
    String(opts.threads),
    '-b',
    String(opts.batch),
    '-ub',
    String(opts.ubatch),
    ...(opts.gpuLayers > 0 ? ['-ngl', String(opts.gpuLayers)] : []),
    ...(opts.embeddings ? ['--embeddings'] : []),
    ...(opts.extra ?? []),
    '--host',
    '127.0.0.1',
  ];
}

/**
 * Starts llama-server; resolves when /health answers 200 (the model is loaded).
 * @throws Error when it exits or is not ready within 120 s.
 */
export async function startLlamaServer(opts: LlamaServerOptions): Promise<RunningServer> {
  const port = await freePort();
  const spawnedAt = performance.now();
  const child = spawnLogged(
    'llama-server',
    opts.bin,
    [...llamaServerArgs(opts), '--port', String(port)],
    process.env,
    opts.log,
  );
  const server = { name: 'llama-server', base: `http://127.0.0.1:${port}`, child, spawnedAt };
  await waitReady(server, `${server.base}/health`, 120_000, opts.log);
  return server;
}

/**
 * Starts the vendored llama.cpp rpc-server (`bin`) on a free loopback port with `threads` CPU threads; resolves once it
 * accepts connections (a probe connection that closes at once is harmless: rpc-server goes back to accept()).
 * @returns the worker as a RunningServer whose `base` is its `host:port` endpoint.
 * @throws Error when it exits or does not listen within 10 s.
 */
export async function startRpcWorker(bin: string, threads: number, log: string): Promise<RunningServer> {
  const port = await freePort();
  const spawnedAt = performance.now();
  const args = ['--host', '127.0.0.1', '--port', String(port), '--threads', String(threads)];
  // Passive OpenMP waiting: on one machine the workers and the daemon take turns (one computes while the others wait
  // for it), and spinning idle threads would steal the cores from the one at work (an artifact of loopback).
  const child = spawnLogged('rpc-server', bin, args, { ...process.env, OMP_WAIT_POLICY: 'passive' }, log);
  const deadline = performance.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`rpc-server exited; see ${log}`);
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (up) break;
    if (performance.now() > deadline) throw new Error(`rpc-server did not listen within 10 s; see ${log}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return { name: 'rpc-server', base: `127.0.0.1:${port}`, child, spawnedAt };
}

/** Stops a server with SIGTERM (SIGKILL after 10 s) and waits for the exit. */
export async function stopServer(server: RunningServer): Promise<void> {
  const { child } = server;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Resident memory of a process from /proc/<pid>/status (bytes): total, anonymous and file-backed (mmap). */
export interface Rss {
  total: number;
  anon: number;
  file: number;
}

/** Reads VmRSS / RssAnon / RssFile of `pid` (Linux only). @throws Error when /proc is unavailable. */
export function readRss(pid: number): Rss {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string): number => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status);
    return m ? Number(m[1]) * 1024 : NaN;
  };
  return { total: kib('VmRSS'), anon: kib('RssAnon'), file: kib('RssFile') };
}

/**
 * Resident memory of `pid` plus its direct children (the daemon and its runner processes), bytes. Children are found
 * by their parent pid in /proc/<pid>/stat (Linux only).
 */
export function readTreeRss(pid: number): Rss {
  const total = readRss(pid);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      if (ppid !== pid) continue;
      const child = readRss(Number(entry));
      total.total += child.total;
      total.anon += child.anon;
      total.file += child.file;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}
