/**
 * What the benchmark's sections share: the daemon on its store, the bench models registered in it, llama-server
 * peers (built once) and started per section, the page cache warmed before a cold start, the memory bandwidth probe.
 */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../src/config';
import { postJson } from './clients';
import { startDaemon, startLlamaServer, stopServer, type LlamaServerOptions, type RunningServer } from './servers';
import { DAEMON_LOG, log, MAIN_JS, MiB, OUT_DIR, sh, type Peer, type Settings } from './settings';

/** Compiles and runs bench/membw.c: read bandwidth (GB/s) per thread count. */
export function memoryBandwidth(threads: number): { threads: number; read_GBps: number }[] {
  const bin = join(REPO_ROOT, 'build', 'bench', 'membw');
  mkdirSync(join(REPO_ROOT, 'build', 'bench'), { recursive: true });
  sh('cc', ['-O2', '-march=native', '-pthread', '-o', bin, join(REPO_ROOT, 'bench', 'membw.c')]);
  return sh(bin, [String(threads)])
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { threads: number; read_GBps: number });
}

/** The daemon on its benchmark store with N slots and the bench's thread count; logs to .cache/bench/daemon.log. */
export function startBenchDaemon(s: Settings, store: string, numParallel: number): Promise<RunningServer> {
  return startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel, threads: s.threads, log: DAEMON_LOG });
}

/**
 * Registers `file` as model `name` and returns the path of the blob the store keeps for it (from /api/show's
 * modelfile FROM line).
 */
export async function createModel(base: string, name: string, file: string): Promise<string> {
  const { json } = await postJson(`${base}/api/create`, { model: name, modelfile: `FROM ${file}\n`, stream: false });
  if ((json as { status?: string }).status !== 'success') throw new Error(`create ${name}: ${JSON.stringify(json)}`);
  const show = (await postJson(`${base}/api/show`, { model: name })).json as { modelfile: string };
  const from = /^FROM (.+)$/m.exec(show.modelfile)?.[1];
  if (!from || !existsSync(from)) throw new Error(`show ${name}: no blob path in ${show.modelfile.slice(0, 200)}`);
  return from;
}

/**
 * createModel unless the store already holds `name` made from the same source file (size and mtime recorded in
 * `<store>/bench-sources.json`): importing 600 MB again would rewrite the blob and leave writeback I/O behind that
 * disturbs the first measurements.
 */
export async function ensureModel(base: string, store: string, name: string, file: string): Promise<string> {
  const record = join(store, 'bench-sources.json');
  const sources = (existsSync(record) ? JSON.parse(readFileSync(record, 'utf8')) : {}) as Record<string, unknown>;
  const st = statSync(file);
  const key = `${file}:${st.size}:${st.mtimeMs}`;
  const blob = sources[name] as { key: string; blob: string } | undefined;
  if (blob?.key === key && existsSync(blob.blob)) {
    try {
      await postJson(`${base}/api/show`, { model: name });
      return blob.blob;
    } catch {
      // not in the store any more: create it again
    }
  }
  const path = await createModel(base, name, file);
  writeFileSync(record, JSON.stringify({ ...sources, [name]: { key, blob: path } }, null, 2));
  return path;
}

/** Reads a file once so that an mmap of it finds every page in the page cache (cold start = load, not disk). */
export function warmPageCache(file: string): void {
  const fd = openSync(file, 'r');
  const buffer = Buffer.allocUnsafe(8 * MiB);
  try {
    while (readSync(fd, buffer, 0, buffer.length, null) > 0);
  } finally {
    closeSync(fd);
  }
}

/** Unloads every model the daemon holds (keep_alive 0). */
export async function unloadAll(base: string): Promise<void> {
  const ps = (await (await fetch(`${base}/api/ps`)).json()) as { models: { name: string }[] };
  for (const m of ps.models) await postJson(`${base}/api/generate`, { model: m.name, keep_alive: 0 });
}

/** The servers of one section: the daemon and one llama-server per peer. */
export interface Servers {
  daemon: RunningServer;
  llamas: RunningServer[];
}

/** Stops the daemon and every llama-server of a section. */
export async function stopAll(servers: Servers): Promise<void> {
  await stopServer(servers.daemon);
  for (const l of servers.llamas) await stopServer(l);
}

/** Starts one llama-server per peer with the same options. */
export async function startPeers(
  peers: readonly Peer[],
  opts: Omit<LlamaServerOptions, 'bin' | 'log'>,
): Promise<RunningServer[]> {
  const out: RunningServer[] = [];
  for (const p of peers) out.push(await startLlamaServer({ ...opts, bin: p.bin, log: p.log }));
  return out;
}

/** Builds (once) the llama-server of each requested flavour and describes it. */
export function buildPeers(s: Settings): Peer[] {
  const flavours: Record<string, { label: string; args: string[] }> = {
    same: { label: 'llama-server, same flags', args: [] },
    defaults: { label: 'llama-server, llama.cpp defaults', args: ['--defaults'] },
  };
  return s.peerKeys.map((key) => {
    const flavour = flavours[key];
    if (!flavour) throw new Error(`unknown peer "${key}" (expected same, defaults)`);
    log(`building ${flavour.label} (once)`);
    const out = sh(process.execPath, [join(REPO_ROOT, 'scripts', 'build-llama-server.mjs'), ...flavour.args]);
    const bin = out.trim().split('\n').pop() ?? '';
    return { key, label: flavour.label, bin, log: join(OUT_DIR, `llama-server-${key}.log`) };
  });
}
