/**
 * `npm run bench`: the daemon against llama.cpp's own llama-server built from the same vendored tree twice — with the
 * addon's ggml flags ("same flags") and the way a user builds llama.cpp by hand ("llama.cpp defaults"; both by
 * scripts/build-llama-server.mjs) — on the same generated ~1B model (Q4_0) and thread count, in one run, requests
 * interleaved. Prints one table of medians with our figure, each llama-server's and the ratios, and writes it to
 * .cache/bench/last-run.md (+ .json) for docs/benchmarks.md. It is not a test and never fails CI.
 *
 * Usage: npm run bench -- [--runs N] [--streams 1,4,8,16] [--threads T] [--sections a,b,...] [--peers same,defaults]
 *   [--quick]
 *   sections: single (decode, prompt eval, TTFT, overhead, cold start, RSS), multiturn, concurrency, embed; and,
 *   daemon only and not in the default set: event-loop (a stream's longest token gap while other requests work, and
 *   the output parsers' cost per token of a 4,000-token answer with tools, bench/parser-cost.ts) and
 *   rpc (decode locally vs over two loopback rpc-server workers) and runner (the process runner vs the in-process
 *   runner, bench/runner-modes.ts), prebuilt (the prebuilt package's addon vs the from-source build,
 *   bench/prebuilt-addon.ts) and parallel (4 clients against the daemon's default slots,
 *   OLLAMA_NUM_PARALLEL=1 and llama-server's `-np -1`, bench/parallel-default.ts), speculative (n-gram, self and
 *   2-layer drafts vs none, bench/speculative.ts) and kv-cache (q8_0 vs f16 KV, bench/kv-cache-type.ts) and prompt-cache (time
 *   to first token returning to an evicted 8k-token conversation with and without the host-RAM prompt cache,
 *   bench/prompt-cache.ts; LLAMAD_BENCH_PROMPT_CACHE_TOKENS sets another prompt size for a smoke run)
 * Backend: LLAMAD_BACKEND (cpu|cuda|...) as for the addon build; on a GPU build both servers offload every layer.
 * What is measured and why: docs/benchmarks.md.
 */
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '../src/config';
import {
  decodeRate,
  forEachLine,
  llamaChat,
  llamaCompletion,
  ollamaChat,
  ollamaGenerate,
  postJson,
  ttft,
  type StreamTiming,
} from './clients';
import { textOfTokens, words } from './prompts';
import {
  readRss,
  readTreeRss,
  startDaemon,
  startRpcWorker,
  startLlamaServer,
  stopServer,
  llamaServerArgs,
  type LlamaServerOptions,
  type RunningServer,
} from './servers';
import { fmt, gaps, median, percentile, ratio } from './stats';
import { prebuiltAddon } from './prebuilt-addon';
import { runnerModes } from './runner-modes';
import { ANSWER_TOKENS, chatStreamGaps, parserCost } from './parser-cost';
import { hostileEventLoop, type LoopDelayFigures } from './event-loop-hostile';
import { HOSTILE_CASES } from '../test/utils/hostile-cases';
import { parallelDefault } from './parallel-default';
import { promptCache } from './prompt-cache';
import { findRpcServerPath } from '../src/native/load-binding';
import { speculative } from './speculative';
import { kvCacheType } from './kv-cache-type';
import { loadBinding } from '../src/native/load-binding';
import { encodePng } from '../test/utils/png';

const MiB = 1024 * 1024;
const CACHE = join(REPO_ROOT, '.cache');
const OUT_DIR = join(CACHE, 'bench');
const DAEMON_LOG = join(OUT_DIR, 'daemon.log');
const MODEL_Q4 = join(CACHE, 'models', 'bench-1b-q4_0.gguf');
const MODEL_BERT = join(CACHE, 'models', 'bench-bert-f16.gguf');
const MODEL_DRAFT_Q4 = join(CACHE, 'models', 'bench-1b-draft-q4_0.gguf');
/** The blob files the daemon's store holds for both models; llama-server is pointed at the same files. */
const blobs = { q4: MODEL_Q4, bert: MODEL_BERT };
const MAIN_JS = join(REPO_ROOT, 'dist', 'src', 'main.js');
const PROMPT_TOKENS = 512;
const DECODE_TOKENS = 128;
const HISTORY_TOKENS = 1500;
const SLOT_CTX = 4096;
const STREAM_SLOT_CTX = 1024;
const BATCH = 512;
const EMBED_INPUTS = 256;

/** A llama-server build the daemon is compared with. */
interface Peer {
  /** 'same' (the addon's flags) or 'defaults' (llama.cpp's own defaults). */
  key: string;
  /** Column title. */
  label: string;
  bin: string;
  log: string;
}

/** Who answers a request: the daemon or the peer of that index. */
type Side = 'ours' | number;

/**
 * The order of the sides in run `r`: rotated per run, so that drift on a shared machine hits every server alike.
 */
function sidesOf(r: number, peers: readonly Peer[]): Side[] {
  const all: Side[] = ['ours', ...peers.map((_, i) => i)];
  const k = r % all.length;
  return [...all.slice(k), ...all.slice(0, k)];
}

/** Values collected per side. */
class PerSide<T> {
  readonly ours: T[] = [];
  readonly peers: T[][];
  constructor(n: number) {
    this.peers = Array.from({ length: n }, () => []);
  }
  push(side: Side, ...values: T[]): void {
    (side === 'ours' ? this.ours : this.peers[side]).push(...values);
  }
  of(side: Side): T[] {
    return side === 'ours' ? this.ours : this.peers[side];
  }
}

/** One table row: a metric, our figure and each peer's, how to read the ratio and the target it is held to. */
interface Row {
  section: string;
  metric: string;
  ours: number;
  /** One figure per peer, in the order of Settings.peers. */
  theirs: number[];
  unit: string;
  digits: number;
  /** 'ratio': ours ÷ theirs; 'delta': ours − theirs (in unit). */
  compare: 'ratio' | 'delta' | 'none';
  target: string;
}

interface Settings {
  runs: number;
  streams: number[];
  threads: number;
  sections: Set<string>;
  backend: string;
  gpu: boolean;
  /** Which llama-server builds to compare with: 'same', 'defaults'. */
  peerKeys: string[];
}

const rows: Row[] = [];
const notes: string[] = [];

function row(r: Omit<Row, 'digits' | 'compare' | 'target'> & Partial<Row>): void {
  rows.push({ digits: 1, compare: 'ratio', target: '', ...r });
}

function log(msg: string): void {
  process.stderr.write(`bench: ${msg}\n`);
}

function settings(): Settings {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string' },
      streams: { type: 'string' },
      threads: { type: 'string' },
      sections: { type: 'string' },
      peers: { type: 'string' },
      quick: { type: 'boolean', default: false },
    },
  });
  const backend = (process.env.LLAMAD_BACKEND ?? 'cpu').toLowerCase();
  return {
    runs: Number(values.runs ?? (values.quick ? 2 : 5)),
    streams: (values.streams ?? (values.quick ? '1,8' : '1,4,8,16')).split(',').map(Number),
    threads: Number(values.threads ?? availableParallelism()),
    sections: new Set((values.sections ?? 'single,multiturn,concurrency,embed').split(',')),
    backend,
    gpu: backend !== 'cpu',
    peerKeys: (values.peers ?? 'same,defaults').split(','),
  };
}

function sh(cmd: string, args: string[], inherit = true): string {
  const r = spawnSync(cmd, args, {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', inherit ? 'inherit' : 'pipe'],
  });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr ?? ''}`);
  return r.stdout;
}

/** Compiles and runs bench/membw.c: read bandwidth (GB/s) per thread count. */
function memoryBandwidth(threads: number): { threads: number; read_GBps: number }[] {
  const bin = join(REPO_ROOT, 'build', 'bench', 'membw');
  mkdirSync(join(REPO_ROOT, 'build', 'bench'), { recursive: true });
  sh('cc', ['-O2', '-march=native', '-pthread', '-o', bin, join(REPO_ROOT, 'bench', 'membw.c')]);
  return sh(bin, [String(threads)])
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { threads: number; read_GBps: number });
}

/** Sampling shared by both servers: Ollama's defaults spelled out for llama-server. */
function sampling(seed: number): Record<string, number> {
  return { temperature: 0.8, top_k: 40, top_p: 0.9, min_p: 0, repeat_penalty: 1, seed };
}

function ollamaOptions(s: Settings, seed: number, numCtx: number, numPredict: number): Record<string, unknown> {
  return {
    options: {
      ...sampling(seed),
      num_ctx: numCtx,
      num_predict: numPredict,
      num_thread: s.threads,
      num_batch: BATCH,
      ...(s.gpu ? { num_gpu: 999 } : {}),
    },
  };
}

function llamaOptions(seed: number, numPredict: number): Record<string, unknown> {
  return { ...sampling(seed), n_predict: numPredict, cache_prompt: true };
}

function serverOptions(s: Settings, model: string, slots: number, slotCtx: number, log: string): LlamaServerOptions {
  return {
    bin: '',
    model,
    ctx: slots * slotCtx,
    slots,
    threads: s.threads,
    batch: BATCH,
    ubatch: BATCH,
    gpuLayers: s.gpu ? 999 : 0,
    log,
  };
}

/** The daemon on its benchmark store with N slots and the bench's thread count; logs to .cache/bench/daemon.log. */
function startBenchDaemon(s: Settings, store: string, numParallel: number): Promise<RunningServer> {
  return startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel, threads: s.threads, log: DAEMON_LOG });
}

/**
 * Registers `file` as model `name` and returns the path of the blob the store keeps for it (from /api/show's
 * modelfile FROM line).
 */
async function createModel(base: string, name: string, file: string): Promise<string> {
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
async function ensureModel(base: string, store: string, name: string, file: string): Promise<string> {
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
function warmPageCache(file: string): void {
  const fd = openSync(file, 'r');
  const buffer = Buffer.allocUnsafe(8 * MiB);
  try {
    while (readSync(fd, buffer, 0, buffer.length, null) > 0);
  } finally {
    closeSync(fd);
  }
}

async function unloadAll(base: string): Promise<void> {
  const ps = (await (await fetch(`${base}/api/ps`)).json()) as { models: { name: string }[] };
  for (const m of ps.models) await postJson(`${base}/api/generate`, { model: m.name, keep_alive: 0 });
}

/** The servers of one section: the daemon and one llama-server per peer. */
interface Servers {
  daemon: RunningServer;
  llamas: RunningServer[];
}

async function stopAll(servers: Servers): Promise<void> {
  await stopServer(servers.daemon);
  for (const l of servers.llamas) await stopServer(l);
}

/** Starts one llama-server per peer with the same options. */
async function startPeers(
  peers: readonly Peer[],
  opts: Omit<LlamaServerOptions, 'bin' | 'log'>,
): Promise<RunningServer[]> {
  const out: RunningServer[] = [];
  for (const p of peers) out.push(await startLlamaServer({ ...opts, bin: p.bin, log: p.log }));
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Sections

/** Single stream: prompt eval (512), decode (128), TTFT, overhead; cold start and RSS from the same processes. */
async function singleStream(s: Settings, peers: readonly Peer[], store: string): Promise<void> {
  // Cold start, one process at a time, on the same file with its pages in the page cache (load work, not disk).
  // The daemon is already running and loads on the first request (Ollama's model); llama-server loads at start-up,
  // so its figure runs from spawn. The daemon's own process start is reported apart.
  warmPageCache(blobs.q4);
  const daemon = await startBenchDaemon(s, store, 1);
  const daemonUp = performance.now() - daemon.spawnedAt;
  warmPageCache(blobs.q4);
  const daemonFirst = await ollamaGenerate(daemon.base, {
    model: 'bench-1b',
    prompt: 'Hello',
    raw: true,
    ...ollamaOptions(s, 1, SLOT_CTX, 1),
  });
  const servers: Servers = { daemon, llamas: [] };
  const llamaFirst: number[] = [];
  try {
    for (const p of peers) {
      warmPageCache(blobs.q4);
      const llama = await startLlamaServer({ ...serverOptions(s, blobs.q4, 1, SLOT_CTX, p.log), bin: p.bin });
      servers.llamas.push(llama);
      const first = await llamaCompletion(llama.base, { prompt: 'Hello', ...llamaOptions(1, 1) });
      llamaFirst.push(first.tokenTimes[0] - llama.spawnedAt);
    }
    row({
      section: 'cold start',
      metric: 'model not loaded → first token (ms): daemon request / llama-server spawn',
      ours: ttft(daemonFirst),
      theirs: llamaFirst,
      unit: 'ms',
      digits: 0,
    });
    row({
      section: 'cold start',
      metric: 'daemon process spawn → listening (ms)',
      ours: daemonUp,
      theirs: peers.map(() => NaN),
      unit: 'ms',
      digits: 0,
      compare: 'none',
    });

    const prompts: string[] = [];
    for (let r = 0; r <= s.runs; r++) {
      prompts.push(await textOfTokens(servers.llamas[0].base, 100 + r, PROMPT_TOKENS - 1));
    }
    const timings = new PerSide<StreamTiming>(peers.length);
    for (let r = 0; r <= s.runs; r++) {
      // run 0 warms every server up and is not counted
      for (const side of sidesOf(r, peers)) {
        const t =
          side === 'ours'
            ? await ollamaGenerate(daemon.base, {
                model: 'bench-1b',
                prompt: prompts[r],
                raw: true,
                ...ollamaOptions(s, r, SLOT_CTX, DECODE_TOKENS),
              })
            : await llamaCompletion(servers.llamas[side].base, {
                prompt: prompts[r],
                ...llamaOptions(r, DECODE_TOKENS),
              });
        if (r > 0) timings.push(side, t);
      }
    }
    const m = (xs: StreamTiming[], f: (t: StreamTiming) => number) => median(xs.map(f));
    const perPeer = (f: (t: StreamTiming) => number) => timings.peers.map((xs) => m(xs, f));
    notes.push(
      `single stream: prompt tokens evaluated ${m(timings.ours, (t) => t.promptCount)} (daemon) vs ` +
        `${perPeer((t) => t.promptCount).join(' / ')} (llama-server); tokens generated ` +
        `${m(timings.ours, (t) => t.evalCount)} vs ${perPeer((t) => t.evalCount).join(' / ')}`,
    );
    const list = (xs: StreamTiming[]) => xs.map((t) => ttft(t).toFixed(0)).join(', ');
    notes.push(
      `single stream: TTFT per run (ms), daemon ${list(timings.ours)}; ` +
        peers.map((p, i) => `${p.label} ${list(timings.peers[i])}`).join('; '),
    );
    const lastToken = (t: StreamTiming): number => t.tokenTimes[t.tokenTimes.length - 1];
    const single: [string, (t: StreamTiming) => number, Partial<Row>][] = [
      [
        `prompt eval tok/s (${PROMPT_TOKENS}-token prompt, server-reported)`,
        (t) => (t.promptCount / t.promptMs) * 1000,
        { unit: 'tok/s', target: '≥ 0.97×' },
      ],
      [`decode tok/s (${DECODE_TOKENS} tokens, client-side)`, decodeRate, { unit: 'tok/s', target: '≥ 0.97×' }],
      ['decode tok/s (server-reported)', (t) => (t.evalCount / t.evalMs) * 1000, { unit: 'tok/s' }],
      [
        `time to first token, ${PROMPT_TOKENS}-token prompt (ms)`,
        ttft,
        { unit: 'ms', compare: 'delta', target: '≤ +5 ms' },
      ],
      [
        'request in → first token, minus prompt eval (ms)',
        (t) => ttft(t) - t.promptMs,
        { unit: 'ms', compare: 'delta' },
      ],
      ['last token → response end (ms)', (t) => t.endAt - lastToken(t), { unit: 'ms', digits: 2, compare: 'delta' }],
    ];
    for (const [metric, f, extra] of single) {
      row({ section: 'single stream', metric, ours: m(timings.ours, f), theirs: perPeer(f), unit: '', ...extra });
    }

    const rssOurs = readTreeRss(daemon.child.pid ?? 0); // the daemon and its runner processes
    const rssTheirs = servers.llamas.map((l) => readRss(l.child.pid ?? 0));
    const memory: [keyof typeof rssOurs, string, string][] = [
      ['total', 'resident memory after the runs (MiB)', '≤ +150 MiB'],
      ['anon', '  of which anonymous (MiB)', ''],
      ['file', '  of which file-backed, mmap (MiB)', ''],
    ];
    for (const [key, metric, target] of memory) {
      row({
        section: 'memory',
        metric,
        ours: rssOurs[key] / MiB,
        theirs: rssTheirs.map((r) => r[key] / MiB),
        unit: 'MiB',
        digits: 0,
        compare: 'delta',
        target,
      });
    }

    if (s.sections.has('multiturn')) await multiTurn(s, servers, peers);
  } finally {
    await stopAll(servers);
  }
}

/** Chat with a 1,500-token shared history: TTFT of the second turn against the first (prefix reuse). */
async function multiTurn(s: Settings, servers: Servers, peers: readonly Peer[]): Promise<void> {
  const first = new PerSide<number>(peers.length);
  const second = new PerSide<number>(peers.length);
  const evaluated = new PerSide<number>(peers.length);
  for (let r = 0; r < Math.max(2, Math.ceil(s.runs / 2)); r++) {
    const history = await textOfTokens(servers.llamas[0].base, 500 + r, HISTORY_TOKENS);
    const messages = [
      { role: 'system', content: `You are a helpful assistant. Background: ${history}` },
      { role: 'user', content: `Question ${r}: ${words(900 + r, 12)}?` },
    ];
    const question = { role: 'user', content: `And then: ${words(950 + r, 10)}?` };
    for (const side of sidesOf(r, peers)) {
      const call = (msgs: unknown[]): Promise<StreamTiming> =>
        side === 'ours'
          ? ollamaChat(servers.daemon.base, {
              model: 'bench-1b',
              messages: msgs,
              ...ollamaOptions(s, r, SLOT_CTX, 32),
            })
          : llamaChat(servers.llamas[side].base, {
              messages: msgs,
              ...sampling(r),
              max_tokens: 32,
              cache_prompt: true,
            });
      const t1 = await call(messages);
      const reply = await replyText(side, servers, messages, r, s);
      const t2 = await call([...messages, { role: 'assistant', content: reply }, question]);
      first.push(side, ttft(t1));
      second.push(side, ttft(t2));
      evaluated.push(side, t2.promptCount);
    }
  }
  notes.push(
    `multi-turn: prompt tokens evaluated in turn 2 (after prefix reuse), daemon ${evaluated.ours.join(', ')}; ` +
      peers.map((p, i) => `${p.label} ${evaluated.peers[i].join(', ')}`).join('; '),
  );
  row({
    section: 'multi-turn',
    metric: `first turn TTFT, ${HISTORY_TOKENS}-token history (ms)`,
    ours: median(first.ours),
    theirs: first.peers.map(median),
    unit: 'ms',
    digits: 0,
  });
  row({
    section: 'multi-turn',
    metric: 'second turn TTFT (ms)',
    ours: median(second.ours),
    theirs: second.peers.map(median),
    unit: 'ms',
    digits: 0,
  });
  row({
    section: 'multi-turn',
    metric: 'second ÷ first turn TTFT',
    ours: median(second.ours) / median(first.ours),
    theirs: second.peers.map((xs, i) => median(xs) / median(first.peers[i])),
    unit: '',
    digits: 3,
    compare: 'none',
    target: 'ours ≤ 0.25',
  });
}

/** The first turn's reply as plain text (a non-streamed repeat of the same seeded request, served from the cache). */
async function replyText(side: Side, servers: Servers, messages: unknown[], r: number, s: Settings): Promise<string> {
  if (side === 'ours') {
    const { json } = await postJson(`${servers.daemon.base}/api/chat`, {
      model: 'bench-1b',
      messages,
      stream: false,
      ...ollamaOptions(s, r, SLOT_CTX, 32),
    });
    return (json as { message: { content: string } }).message.content;
  }
  const { json } = await postJson(`${servers.llamas[side].base}/v1/chat/completions`, {
    messages,
    ...sampling(r),
    max_tokens: 32,
  });
  return (json as { choices: { message: { content: string } }[] }).choices[0].message.content;
}

/** N concurrent streams of 128 tokens with N slots on every server: aggregate tokens/s and inter-token gaps. */
async function concurrency(s: Settings, peers: readonly Peer[], store: string): Promise<void> {
  let single = NaN;
  for (const n of s.streams) {
    const llamas = await startPeers(peers, serverOptions(s, blobs.q4, n, STREAM_SLOT_CTX, ''));
    const servers: Servers = { daemon: await startBenchDaemon(s, store, n), llamas };
    try {
      // at least ≈ 1,000 gaps per side for a p99 (127 per stream and run)
      const runs = Math.max(2, Math.ceil(s.runs / 2), Math.ceil(8 / n));
      const agg = new PerSide<number>(peers.length);
      const gap = new PerSide<number>(peers.length);
      for (let r = 0; r <= runs; r++) {
        for (const side of sidesOf(r, peers)) {
          const predict = r === 0 ? 8 : DECODE_TOKENS; // run 0 only warms up
          const started = performance.now();
          const all = await Promise.all(
            Array.from({ length: n }, (_, i) => {
              const prompt = words(2000 + n * 100 + i + r * 7, 24);
              return side === 'ours'
                ? ollamaGenerate(servers.daemon.base, {
                    model: 'bench-1b',
                    prompt,
                    raw: true,
                    ...ollamaOptions(s, i, STREAM_SLOT_CTX, predict),
                  })
                : llamaCompletion(servers.llamas[side].base, { prompt, ...llamaOptions(i, predict) });
            }),
          );
          if (r === 0) continue; // warm-up
          const last = Math.max(...all.map((t) => t.tokenTimes[t.tokenTimes.length - 1]));
          const tokens = all.reduce((sum, t) => sum + t.evalCount, 0);
          agg.push(side, (tokens / (last - started)) * 1000);
          gap.push(side, ...all.flatMap((t) => gaps(t.tokenTimes)));
        }
      }
      const ours = median(agg.ours);
      if (n === 1) single = ours;
      row({
        section: 'concurrency',
        metric: `aggregate tok/s, ${n} stream${n > 1 ? 's' : ''} (-np ${n})`,
        ours,
        theirs: agg.peers.map(median),
        unit: 'tok/s',
        target: n === 8 ? '≥ 1.0×' : '',
      });
      for (const p of [50, 99]) {
        row({
          section: 'concurrency',
          metric: `  p${p} time between tokens, ${n} stream${n > 1 ? 's' : ''} (ms)`,
          ours: percentile(gap.ours, p),
          theirs: gap.peers.map((xs) => percentile(xs, p)),
          unit: 'ms',
          digits: 1,
          target: p === 99 ? (n === 1 ? '≤ 1.1×' : '≤ 1.2×') : '',
        });
      }
      if (n > 1 && Number.isFinite(single)) {
        row({
          section: 'concurrency',
          metric: `  ours at ${n} streams ÷ ours at 1 stream`,
          ours: ours / single,
          theirs: peers.map(() => NaN),
          unit: '×',
          digits: 2,
          compare: 'none',
          target: n === 8 ? '≥ 3× where the hardware allows' : '',
        });
      }
    } finally {
      await stopAll(servers);
    }
  }
}

/** 256 inputs in one call: /api/embed vs llama-server's /v1/embeddings (bge-small-shaped bert, F16). */
async function embeddings(s: Settings, peers: readonly Peer[], store: string): Promise<void> {
  const slots = 16;
  const llamas = await startPeers(peers, { ...serverOptions(s, blobs.bert, slots, 512, ''), embeddings: true });
  const servers: Servers = { daemon: await startBenchDaemon(s, store, 1), llamas };
  try {
    const inputs = Array.from({ length: EMBED_INPUTS }, (_, i) => words(3000 + i, 16 + (i % 4) * 8));
    const rate = new PerSide<number>(peers.length);
    for (let r = 0; r <= s.runs; r++) {
      for (const side of sidesOf(r, peers)) {
        const res =
          side === 'ours'
            ? await postJson(`${servers.daemon.base}/api/embed`, {
                model: 'bench-bert',
                input: inputs,
                options: { num_thread: s.threads },
              })
            : await postJson(`${servers.llamas[side].base}/v1/embeddings`, { input: inputs });
        const body = res.json as { embeddings?: unknown[]; data?: unknown[] };
        const got = (side === 'ours' ? body.embeddings : body.data)?.length;
        if (got !== EMBED_INPUTS) throw new Error(`embeddings: ${side} returned ${got} vectors`);
        if (r > 0) rate.push(side, (EMBED_INPUTS / res.ms) * 1000);
      }
    }
    notes.push(
      `embeddings: llama-server ran with ${llamaServerArgs({ ...serverOptions(s, 'bench-bert-f16.gguf', slots, 512, ''), bin: '', embeddings: true }).join(' ')}`,
    );
    row({
      section: 'embeddings',
      metric: `inputs/s, ${EMBED_INPUTS} inputs in one call`,
      ours: median(rate.ours),
      theirs: rate.peers.map(median),
      unit: 'inputs/s',
      target: '≥ 1.0×',
    });
  } finally {
    await stopAll(servers);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Event loop: a running stream's longest token gap while other requests do heavy native work

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'models');
/** Slots of the daemon in the event-loop section: the second model's context is created with this many. */
const EVL_SLOTS = 8;
/** Side of the square PNG sent to the vision model (pixels). */
const EVL_IMAGE_SIDE = 2048;

/** A streamed /api/generate whose token arrival times can be read while it runs, and that can be aborted. */
function liveStream(
  base: string,
  body: Record<string, unknown>,
): { times: number[]; end: { reason: string; finished: boolean }; stop: () => Promise<void> } {
  const times: number[] = [];
  const end = { reason: '', finished: false };
  const abort = new AbortController();
  const done = (async () => {
    const res = await fetch(`${base}/api/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
      signal: abort.signal,
    });
    await forEachLine('stream', res, (line, at) => {
      const record = JSON.parse(line) as { response?: string; error?: string; done_reason?: string };
      if (record.error) throw new Error(`stream: ${record.error}`);
      if (record.done_reason) end.reason = record.done_reason;
      times.push(at);
    });
  })()
    .catch((err: unknown) => {
      if (!abort.signal.aborted) throw err;
    })
    .finally(() => {
      end.finished = true;
    });
  return {
    times,
    end,
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const end = (live: { end: { finished: boolean } }) => live.end.finished;

/**
 * The longest gap (ms) between consecutive token arrivals of `times` that overlaps [from, to], the window of the
 * disturbing request: the gap that starts before it ends and ends after it starts.
 */
function longestGapIn(times: readonly number[], from: number, to: number): number {
  let longest = NaN;
  for (let i = 1; i < times.length; i++) {
    if (times[i] < from || times[i - 1] > to) continue;
    const gap = times[i] - times[i - 1];
    if (!(gap <= longest)) longest = gap;
  }
  return longest;
}

/** A large PNG that still compresses well (gradients plus a pattern): stb_image has to inflate every row. */
function bigPng(side: number): Buffer {
  return encodePng(side, side, (x, y) => [x & 255, y & 255, (x ^ y) & 255]);
}

/**
 * Longest token gap of one running stream (tiny-qwen2-tools, 32k context, 8 slots) on the daemon: with nothing else going on,
 * while a second model loads (bench-1b-q4_0, a context of EVL_SLOTS slots × 4096), and while another client sends a large PNG
 * to a vision model (tiny-llama-spm + tiny-mmproj). Every native call that runs on the JS thread shows up as a gap.
 * Always one thread (`--threads` is ignored here).
 */
async function eventLoop(settings: Settings): Promise<void> {
  // One decode thread for the stream (and the daemon): on a 2-core machine the disturbing work (a context creation,
  // an image decode) then has a core of its own, so a long gap means a blocked event loop, not a starved CPU.
  const s: Settings = { ...settings, threads: 1 };
  sh(process.execPath, [
    join(REPO_ROOT, 'dist', 'scripts', 'make-test-models.js'),
    '--only',
    'tiny-llama-spm.gguf,tiny-qwen2-tools.gguf,tiny-mmproj.gguf',
  ]);
  sh(process.execPath, [
    join(REPO_ROOT, 'dist', 'scripts', 'make-test-models.js'),
    '--only',
    'bench-1b-f16.gguf,bench-1b-q4_0.gguf',
  ]);
  const store = join(OUT_DIR, 'store-event-loop');
  const daemon = await startBenchDaemon(s, store, EVL_SLOTS);
  try {
    const base = daemon.base;
    const spm = join(FIXTURES, 'tiny-llama-spm.gguf');
    await ensureModel(base, store, 'evl-stream', join(FIXTURES, 'tiny-qwen2-tools.gguf'));
    const other = await ensureModel(base, store, 'evl-other', MODEL_Q4);
    const { json } = await postJson(`${base}/api/create`, {
      model: 'evl-vision',
      modelfile: `FROM ${spm}\nFROM ${join(FIXTURES, 'tiny-mmproj.gguf')}\n`,
      stream: false,
    });
    if ((json as { status?: string }).status !== 'success') {
      throw new Error(`create evl-vision: ${JSON.stringify(json)}`);
    }
    const png = bigPng(EVL_IMAGE_SIDE).toString('base64');
    const streamBody = (seed: number) => ({
      model: 'evl-stream',
      prompt: 'Once upon a time',
      raw: true,
      options: { ...sampling(seed), num_ctx: 32768, num_predict: 30000, num_thread: s.threads },
    });
    const tiny = { num_predict: 1, num_thread: s.threads };
    // Load the stream's and the vision model once: the vision window measures the image, not a model load.
    await postJson(`${base}/api/generate`, { ...streamBody(0), stream: false, options: { ...tiny, num_ctx: 32768 } });
    await postJson(`${base}/api/generate`, { model: 'evl-vision', prompt: 'hi', stream: false, options: tiny });

    const quiet: number[] = [];
    const loading: number[] = [];
    const imaging: number[] = [];
    const windows: number[][] = [[], []];
    for (let r = 0; r <= s.runs; r++) {
      const disturbances: [number[], number[], () => Promise<unknown>][] = [
        [quiet, [], () => sleep(500)],
        [
          loading,
          windows[0],
          () =>
            postJson(`${base}/api/generate`, {
              model: 'evl-other',
              prompt: 'hi',
              stream: false,
              options: { ...tiny, num_ctx: 4096 },
            }),
        ],
        [
          imaging,
          windows[1],
          () =>
            postJson(`${base}/api/generate`, {
              model: 'evl-vision',
              prompt: 'hi',
              images: [png],
              stream: false,
              options: tiny,
            }),
        ],
      ];
      for (const [out, window, disturb] of disturbances) {
        await postJson(`${base}/api/generate`, { model: 'evl-other', keep_alive: 0 });
        warmPageCache(other); // the window is the load work (mmap, context creation), not the disk
        const live = liveStream(base, streamBody(r));
        while (live.times.length < 20) await sleep(5);
        await sleep(50);
        const from = performance.now();
        await disturb();
        const to = performance.now();
        // The gap that spans the window ends with the first token after it.
        while (!end(live) && !(live.times[live.times.length - 1] > to)) await sleep(5);
        await live.stop();
        const lastToken = live.times[live.times.length - 1];
        if (!(lastToken > to)) {
          throw new Error(
            `event loop: the stream ended before the disturbing request did (${live.times.length} tokens, ${(lastToken - live.times[0]).toFixed(0)} ms, window ${(to - from).toFixed(0)} ms, done_reason ${live.end.reason})`,
          );
        }
        log(
          `event loop run ${r}: window ${(to - from).toFixed(0)} ms, longest gap ` +
            `${longestGapIn(live.times, from, to).toFixed(1)} ms, ${live.times.length} tokens`,
        );
        if (r > 0) {
          out.push(longestGapIn(live.times, from, to));
          window.push(to - from);
        }
      }
    }
    const metric = (what: string) => `longest gap between tokens of a running stream (ms), ${what}`;
    const rowOf = (what: string, values: number[]) =>
      row({
        section: 'event loop',
        metric: metric(what),
        ours: median(values),
        theirs: [],
        unit: 'ms',
        compare: 'none',
      });
    rowOf('nothing else running (500 ms window)', quiet);
    rowOf(`while a second model loads (bench-1b-q4_0, ${EVL_SLOTS} slots × 4096)`, loading);
    rowOf(`while another client sends a ${EVL_IMAGE_SIDE}×${EVL_IMAGE_SIDE} PNG to a vision model`, imaging);
    await answerWithTools(s, base);
    notes.push(
      `event loop: stream on tiny-qwen2-tools (OLLAMA_NUM_PARALLEL=${EVL_SLOTS}); the disturbing request took ` +
        `${fmt(median(windows[0]), 0)} ms (model load) and ${fmt(median(windows[1]), 0)} ms (image, ` +
        `${(png.length / MiB).toFixed(1)} MiB of base64) (medians)`,
    );
  } finally {
    await stopServer(daemon);
  }
  await hostileRows();
}

/** The event-loop section's hostile run (bench/event-loop-hostile.ts): the daemon's own event-loop delay. */
async function hostileRows(): Promise<void> {
  const result = await hostileEventLoop(log);
  const phases: [string, LoopDelayFigures][] = [
    ['4 benign streams only', result.baseline],
    ['4 benign streams + the hostile suite', result.hostile],
  ];
  for (const [what, f] of phases) {
    for (const [q, value] of [
      ['p50', f.p50],
      ['p99', f.p99],
      ['max', f.max],
    ] as const) {
      row({
        section: 'event loop',
        metric: `daemon event-loop delay ${q} (ms), ${what}`,
        ours: value,
        theirs: [],
        unit: 'ms',
        compare: 'none',
      });
    }
  }
  row({
    section: 'event loop',
    metric: 'longest gap between chunks of a benign stream (ms), during the hostile suite',
    ours: result.longestGapMs,
    theirs: [],
    unit: 'ms',
    compare: 'none',
  });
  notes.push(
    `event loop, hostile suite: ${HOSTILE_CASES.length} requests in ${fmt(result.hostileMs / 1000, 1)} s; ` +
      `p50 is the median and p99/max the largest of ${result.hostile.scrapes} scrapes (each over the last 5-10 s); ` +
      (result.failedCases.length === 0
        ? 'every hostile request got a 4xx or completed'
        : `not a 4xx or a completed 2xx: ${result.failedCases.join('; ')}`),
  );
}

/**
 * The event-loop section's 4,000-token answer with tools (bench/parser-cost.ts): the output parsers' cost per token
 * in process (rendered and native mode, a synthetic answer ending in a long tool call), then a live /api/chat stream
 * with tools on the daemon (evl-stream), whose gaps between tokens late in the answer show any per-token cost that
 * grows with the answer.
 */
async function answerWithTools(s: Settings, base: string): Promise<void> {
  const metric = (what: string) => `${ANSWER_TOKENS}-token answer with tools: ${what}`;
  const daemonRow = (what: string, value: number, unit: string, digits = 1) =>
    row({ section: 'event loop', metric: metric(what), ours: value, theirs: [], unit, digits, compare: 'none' });
  for (const { mode, figures } of await parserCost(join(FIXTURES, 'tiny-qwen2-tools.gguf'), s.runs)) {
    log(
      `parser cost, ${mode}: ${figures.firstUs.toFixed(1)} µs/token (first 500), ${figures.lastUs.toFixed(1)} ` +
        `µs/token (last 500), longest ${figures.longestMs.toFixed(2)} ms, total ${figures.totalMs.toFixed(0)} ms`,
    );
    daemonRow(`parser cost per token, first 500 tokens (µs), ${mode}`, figures.firstUs, 'µs');
    daemonRow(`parser cost per token, last 500 tokens (µs), ${mode}`, figures.lastUs, 'µs');
    daemonRow(`longest parser call (ms), ${mode}`, figures.longestMs, 'ms', 2);
  }
  const streams = [];
  for (let r = 0; r < Math.max(1, s.runs); r++) {
    streams.push(await chatStreamGaps(base, 'evl-stream', { ...sampling(r), num_ctx: 8192, num_thread: s.threads }));
    const g = streams[streams.length - 1];
    log(
      `chat stream with tools run ${r}: ${g.tokens} tokens, mean gap ${g.firstMs.toFixed(2)} ms (first 500) → ` +
        `${g.lastMs.toFixed(2)} ms (last 500), longest ${g.longestMs.toFixed(1)} ms`,
    );
  }
  daemonRow(
    'mean gap between tokens of a /api/chat stream, first 500 (ms)',
    median(streams.map((g) => g.firstMs)),
    'ms',
    2,
  );
  daemonRow(
    'mean gap between tokens of a /api/chat stream, last 500 (ms)',
    median(streams.map((g) => g.lastMs)),
    'ms',
    2,
  );
  daemonRow('longest gap between tokens of a /api/chat stream (ms)', median(streams.map((g) => g.longestMs)), 'ms');
  notes.push(
    `event loop: the ${ANSWER_TOKENS}-token answer with tools — parser rows feed a synthetic answer (thinking, text, ` +
      `one long write_file call) through the daemon's parsers in process; the stream rows are /api/chat on ` +
      `evl-stream (random weights: about ${fmt(median(streams.map((g) => g.tokens)), 0)} tokens streamed, median)`,
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Output

function compareCell(r: Row, theirs: number): string {
  if (r.compare === 'ratio') return ratio(r.ours, theirs);
  if (r.compare === 'delta') {
    const d = r.ours - theirs;
    return Number.isFinite(d) ? `${d >= 0 ? '+' : ''}${d.toFixed(r.digits)} ${r.unit}` : 'n/a';
  }
  return '';
}

function markdownTable(peers: readonly Peer[]): string {
  const cells = (values: string[]) => `| ${values.join(' | ')} |`;
  const lines = [
    cells(['section', 'metric', 'daemon', ...peers.map((p) => p.label), ...peers.map((p) => `vs ${p.key}`), 'target']),
    cells(['---', '---', '---:', ...peers.flatMap(() => ['---:', '---:']), '---']),
  ];
  for (const r of rows) {
    // A daemon-only row (event loop) has no peer figures: its peer cells stay empty.
    const theirs = peers.map((_, i) => r.theirs[i] ?? NaN);
    lines.push(
      cells([
        r.section,
        r.metric,
        fmt(r.ours, r.digits),
        ...theirs.map((t) => fmt(t, r.digits)),
        ...theirs.map((t) => compareCell(r, t)),
        r.target,
      ]),
    );
  }
  return lines.join('\n');
}

/**
 * The cost of llama.cpp's RPC backend (daemon only): decode of the same model loaded locally and with its layers on
 * two rpc-server workers on loopback (model `bench-1b-rpc`: the same blob with `PARAMETER rpc`), runs interleaved.
 * Each worker gets all threads (they compute one after the other: layers are split across them, not run in
 * parallel); the main process keeps the token embeddings and samples. Loopback shows the protocol's per-step cost
 * (one graph-compute round trip per worker per token, plus the activations), not a network's. The workers wait
 * passively (OMP_WAIT_POLICY=passive): spinning idle workers would steal the cores of the one at work.
 */
async function rpcDecode(s: Settings, store: string): Promise<void> {
  const bin = findRpcServerPath();
  if (!bin) throw new Error('rpc-server is not built: npm run build:native');
  const workers = [
    await startRpcWorker(bin, s.threads, join(OUT_DIR, 'rpc-worker-0.log')),
    await startRpcWorker(bin, s.threads, join(OUT_DIR, 'rpc-worker-1.log')),
  ];
  const daemon = await startBenchDaemon(s, store, 1);
  try {
    const modelfile = `FROM ${blobs.q4}\nPARAMETER rpc ${workers.map((w) => w.base).join(',')}\n`;
    const { json } = await postJson(`${daemon.base}/api/create`, { model: 'bench-1b-rpc', modelfile, stream: false });
    if ((json as { status?: string }).status !== 'success') {
      throw new Error(`create bench-1b-rpc: ${JSON.stringify(json)}`);
    }
    const rates = { local: [] as number[], rpc: [] as number[] };
    for (let r = 0; r <= s.runs; r++) {
      // run 0 loads both (a reload each time: one blob, two specs) and is not counted; the order alternates per run
      const order: ('local' | 'rpc')[] = r % 2 === 0 ? ['local', 'rpc'] : ['rpc', 'local'];
      for (const side of order) {
        const model = side === 'local' ? 'bench-1b' : 'bench-1b-rpc';
        // one request to load (the models share a blob, so switching reloads), then the measured one
        await ollamaGenerate(daemon.base, { model, prompt: 'Hello', raw: true, ...ollamaOptions(s, r, 1024, 1) });
        const t = await ollamaGenerate(daemon.base, {
          model,
          prompt: words(300 + r, 40),
          raw: true,
          ...ollamaOptions(s, r, 1024, DECODE_TOKENS),
        });
        if (r > 0) rates[side].push(decodeRate(t));
      }
    }
    const local = median(rates.local);
    const rpc = median(rates.rpc);
    const only = (metric: string, ours: number, unit: string, digits = 1) =>
      row({ section: 'rpc', metric, ours, theirs: [], unit, digits, compare: 'none' });
    only(`local: decode tok/s (${DECODE_TOKENS} tokens, client-side)`, local, 'tok/s');
    only(`2 loopback RPC workers: decode tok/s (${DECODE_TOKENS} tokens, client-side)`, rpc, 'tok/s');
    only('RPC ÷ local', rpc / local, '×', 2);
    notes.push(
      `rpc: decode tok/s per run, local ${rates.local.map((x) => x.toFixed(1)).join(', ')}; ` +
        `RPC ${rates.rpc.map((x) => x.toFixed(1)).join(', ')} (workers: ${workers.map((w) => w.base).join(', ')})`,
    );
  } finally {
    await stopServer(daemon);
    for (const w of workers) await stopServer(w);
  }
}

/** Builds (once) the llama-server of each requested flavour and describes it. */
function buildPeers(s: Settings): Peer[] {
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

async function main(): Promise<void> {
  const s = settings();
  mkdirSync(OUT_DIR, { recursive: true });
  rmSync(DAEMON_LOG, { force: true });
  if (!existsSync(MAIN_JS)) throw new Error('dist/ is missing: run `npm install` first');

  if (
    ![
      'single',
      'multiturn',
      'concurrency',
      'embed',
      'rpc',
      'runner',
      'prebuilt',
      'parallel',
      'speculative',
      'kv-cache',
      'prompt-cache',
    ].some((x) => s.sections.has(x))
  ) {
    // Sections that run the daemon alone (event-loop): no llama-server, no bench models, no bandwidth figure.
    if (s.sections.has('event-loop')) {
      log('event loop: token gaps of a stream while other requests work');
      await eventLoop(s);
    }
    const cpu = cpus()[0]?.model ?? 'unknown CPU';
    const header = [
      `Run ${new Date().toISOString()} · backend ${s.backend} · ${cpu} · ${availableParallelism()} logical CPUs · ` +
        `threads 1 (event-loop) · runs ${s.runs} (medians)`,
      `Daemon build: ${addonFlags()}`,
    ];
    const md = [...header.map((h) => `- ${h}`), '', markdownTable([]), '', ...notes.map((n) => `- ${n}`)].join('\n');
    writeFileSync(join(OUT_DIR, 'last-run.md'), `${md}\n`);
    writeFileSync(join(OUT_DIR, 'last-run.json'), `${JSON.stringify({ header, rows, notes }, null, 2)}\n`);
    console.log(md);
    return;
  }
  // rpc is daemon-only too: no llama-server is built when it (with event-loop) is all that was asked for.
  const peers = [...s.sections].every((x) =>
    ['rpc', 'event-loop', 'runner', 'prebuilt', 'kv-cache', 'prompt-cache'].includes(x),
  )
    ? []
    : buildPeers(s);
  for (const p of peers) rmSync(p.log, { force: true });
  log('making the benchmark models (once)');
  sh(process.execPath, [
    join(REPO_ROOT, 'dist', 'scripts', 'make-test-models.js'),
    '--only',
    'bench-1b-f16.gguf,bench-1b-q4_0.gguf,bench-bert-f16.gguf,bench-1b-draft-f16.gguf,bench-1b-draft-q4_0.gguf',
  ]);
  log('measuring memory bandwidth');
  const bandwidth = memoryBandwidth(s.threads);
  const readBw = bandwidth.find((b) => b.threads === s.threads)?.read_GBps ?? NaN;

  const store = join(OUT_DIR, 'store');
  {
    const d = await startBenchDaemon(s, store, 1);
    try {
      blobs.q4 = await ensureModel(d.base, store, 'bench-1b', MODEL_Q4);
      blobs.bert = await ensureModel(d.base, store, 'bench-bert', MODEL_BERT);
      await unloadAll(d.base);
    } finally {
      await stopServer(d);
    }
  }
  if (s.sections.has('single')) {
    log('single stream, multi-turn, cold start, memory');
    await singleStream(s, peers, store);
  }
  if (s.sections.has('concurrency')) {
    log(`concurrency at ${s.streams.join(', ')} streams`);
    await concurrency(s, peers, store);
  }
  if (s.sections.has('parallel')) {
    log('4 clients: default slots vs OLLAMA_NUM_PARALLEL=1 vs llama-server -np -1');
    await parallelDefault({
      runs: s.runs,
      peerCount: peers.length,
      startDaemon: (n) =>
        startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: n, threads: s.threads, log: DAEMON_LOG }),
      startPeers: (slots, total) =>
        startPeers(peers, { ...serverOptions(s, blobs.q4, 1, total, ''), slots, ctx: total }),
      ollamaOptions: (seed, numCtx, predict) => ollamaOptions(s, seed, numCtx, predict),
      llamaOptions: (seed, predict) => llamaOptions(seed, predict),
      row: (metric, ours, theirs, unit, compare) =>
        row({ section: 'parallel', metric, ours, theirs, unit, compare, digits: unit === '×' ? 2 : 1 }),
    });
  }
  if (s.sections.has('prompt-cache')) {
    log('returning to an evicted conversation: host-RAM prompt cache vs LLAMAD_CACHE_RAM=0');
    await promptCache({
      runs: s.runs,
      tokens: Number(process.env.LLAMAD_BENCH_PROMPT_CACHE_TOKENS ?? 8192),
      startDaemon: (env) =>
        startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: 1, threads: s.threads, log: DAEMON_LOG, env }),
      ollamaOptions: (seed, numCtx, predict) => ollamaOptions(s, seed, numCtx, predict),
      row: (metric, value, unit, target = '', digits = 1) =>
        row({
          section: 'prompt-cache',
          metric,
          ours: value,
          theirs: peers.map(() => NaN),
          unit,
          digits,
          compare: 'none',
          target,
        }),
    });
  }
  if (s.sections.has('embed')) {
    log('embeddings');
    await embeddings(s, peers, store);
  }
  if (s.sections.has('rpc')) {
    log('decode over two loopback RPC workers vs local');
    await rpcDecode(s, store);
  }
  if (s.sections.has('event-loop')) {
    log('event loop: token gaps of a stream while other requests work');
    await eventLoop(s);
  }
  if (s.sections.has('runner')) {
    log('process runner vs in-process runner');
    await runnerModes({
      runs: s.runs,
      startDaemon: (n, env) =>
        startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: n, threads: s.threads, log: DAEMON_LOG, env }),
      options: (seed, numCtx, predict) => ollamaOptions(s, seed, numCtx, predict),
      prompt: (seed, tokens) => Promise.resolve(words(seed, Math.round(tokens * 0.75))),
      row: (metric, value, unit, digits = 1) =>
        row({ section: 'runner', metric, ours: value, theirs: peers.map(() => NaN), unit, digits, compare: 'none' }),
      warm: () => warmPageCache(blobs.q4),
    });
  }
  if (s.sections.has('prebuilt')) {
    log('prebuilt package addon vs from-source addon');
    const backend = (process.env.LLAMAD_BACKEND ?? 'cpu').toLowerCase();
    await prebuiltAddon({
      runs: s.runs,
      sourceAddon: join(REPO_ROOT, 'build', backend, 'Release', 'llamad.node'),
      prebuiltAddon: join(REPO_ROOT, 'build', `prebuilt-${backend}`, 'bin', 'llamad.node'),
      startDaemon: (env) =>
        startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: 1, threads: s.threads, log: DAEMON_LOG, env }),
      options: (seed, numCtx, predict) => ollamaOptions(s, seed, numCtx, predict),
      prompt: (seed, tokens) => Promise.resolve(words(seed, Math.round(tokens * 0.75))),
      row: (metric, value, unit, digits = 1) =>
        row({ section: 'prebuilt', metric, ours: value, theirs: peers.map(() => NaN), unit, digits, compare: 'none' }),
    });
  }

  if (s.sections.has('speculative')) {
    log('speculative decoding: n-gram, self draft, 2-layer draft vs none');
    await speculative({
      runs: s.runs,
      threads: s.threads,
      targetFile: MODEL_Q4,
      draftFile: MODEL_DRAFT_Q4,
      startDaemon: () =>
        startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: 1, threads: s.threads, log: DAEMON_LOG }),
      startPeers: (extra) => startPeers(peers, { ...serverOptions(s, blobs.q4, 1, 2048, ''), extra }),
      peerCount: peers.length,
      post: async (url, body) => (await postJson(url, body)).json,
      binding: () => loadBinding(),
      row: (metric, ours, theirs, unit, digits, compare) =>
        row({ section: 'speculative', metric, ours, theirs, unit, digits, compare }),
    });
  }
  if (s.sections.has('kv-cache')) {
    log('KV cache q8_0 vs f16 (flash attention on)');
    await kvCacheType({
      runs: s.runs,
      startDaemon: (env) =>
        startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: 1, threads: s.threads, log: DAEMON_LOG, env }),
      options: (seed, numCtx, predict) => ollamaOptions(s, seed, numCtx, predict),
      prompt: (seed, tokens) => Promise.resolve(words(seed, Math.round(tokens * 0.75))),
      row: (metric, value, unit, digits = 1) =>
        row({ section: 'kv-cache', metric, ours: value, theirs: peers.map(() => NaN), unit, digits, compare: 'none' }),
    });
  }

  // Every weight is read once per decoded token: bytes per token ≈ the Q4_0 file size. On a GPU the weights live in
  // device memory, so the host's RAM bandwidth says nothing: the bound then needs the device's bandwidth in GB/s
  // (its data sheet figure, e.g. 3350 for an H100 SXM) in LLAMAD_BENCH_GPU_BW_GBPS, else it is not reported.
  const weights = statSync(MODEL_Q4).size;
  const gpuBw = Number(process.env.LLAMAD_BENCH_GPU_BW_GBPS ?? NaN);
  const boundBw = s.gpu ? gpuBw : readBw;
  const bound = (boundBw * 1e9) / weights;
  const boundSource = s.gpu ? `device bandwidth ${fmt(gpuBw)} GB/s (LLAMAD_BENCH_GPU_BW_GBPS)` : 'host read bandwidth';
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const header = [
    `Run ${new Date().toISOString()} · backend ${s.backend} · ${cpu} · ${availableParallelism()} logical CPUs · ` +
      `${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM · threads ${s.threads} · runs ${s.runs} (medians)`,
    `Daemon build: ${addonFlags()}`,
    ...peers.map((p) => `${p.label}: ${p.bin.replace(REPO_ROOT + '/', '')}`),
    `Memory read bandwidth (bench/membw.c): ${bandwidth.map((b) => `${b.read_GBps} GB/s at ${b.threads} thread${b.threads > 1 ? 's' : ''}`).join(', ')}`,
    Number.isFinite(bound)
      ? `Model: bench-1b-q4_0.gguf, ${(weights / MiB).toFixed(1)} MiB → single-stream decode bound ${fmt(bound)} tok/s ` +
        `(${boundSource} ÷ weight bytes per token)`
      : `Model: bench-1b-q4_0.gguf, ${(weights / MiB).toFixed(1)} MiB; no decode bound (set LLAMAD_BENCH_GPU_BW_GBPS)`,
    ...(peers.length === 0
      ? []
      : [
          `llama-server: ${llamaServerArgs({ ...serverOptions(s, 'bench-1b-q4_0.gguf', 1, SLOT_CTX, ''), bin: '' }).join(' ')} (-np/-c per section)`,
        ]),
  ];
  const decode = rows.find((r) => r.metric.startsWith('decode tok/s (128'));
  if (decode && peers.length > 0 && Number.isFinite(bound)) {
    header.push(
      `Decode as a share of the bound: daemon ${fmt((decode.ours / bound) * 100)} %, ` +
        peers.map((p, i) => `${p.label} ${fmt((decode.theirs[i] / bound) * 100)} %`).join(', '),
    );
  }
  const md = [...header.map((h) => `- ${h}`), '', markdownTable(peers), '', ...notes.map((n) => `- ${n}`)].join('\n');
  writeFileSync(join(OUT_DIR, 'last-run.md'), `${md}\n`);
  writeFileSync(
    join(OUT_DIR, 'last-run.json'),
    `${JSON.stringify({ header, peers, bandwidth, rows, notes }, null, 2)}\n`,
  );
  console.log(md);
  log(`written to ${join(OUT_DIR, 'last-run.md')}`);
}

/** The addon's ggml switches as `npm install` resolved them (scripts/native-flags.mjs), from its CMake cache. */
function addonFlags(): string {
  const cache = join(REPO_ROOT, 'build', (process.env.LLAMAD_BACKEND ?? 'cpu').toLowerCase(), 'CMakeCache.txt');
  if (!existsSync(cache)) return 'unknown (no CMake cache)';
  const text = readFileSync(cache, 'utf8');
  return ['GGML_NATIVE', 'GGML_OPENMP', 'GGML_CUDA', 'GGML_VULKAN']
    .map((k) => `${k}=${new RegExp(`^${k}:BOOL=(\\w+)`, 'm').exec(text)?.[1] ?? '?'}`)
    .join(' ');
}

main().catch((err: unknown) => {
  // Not a test: a failure is reported but the exit status stays 0 only when asked (CI never runs the bench).
  console.error(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
