/**
 * Bench section `parallel`: 4 concurrent clients against servers left at their defaults — the daemon without
 * OLLAMA_NUM_PARALLEL (4 slots sharing one num_ctx KV cache, docs/native.md "Parallel slots"), the daemon with
 * OLLAMA_NUM_PARALLEL=1 (one slot: the clients are served one after another), and each llama-server with `-np -1`
 * (its auto mode: 4 slots over a unified cache) and the same total context. Same model (bench-1b Q4_0) and threads.
 * Rows: aggregate tok/s (all tokens ÷ (last token − requests sent)) and p99 time between tokens of a stream.
 */
import { performance } from 'node:perf_hooks';
import { llamaCompletion, ollamaGenerate, type StreamTiming } from './clients';
import { words } from './prompts';
import { stopServer, type RunningServer } from './servers';
import { gaps, median, percentile } from './stats';

/** Clients sending at once. */
const CLIENTS = 4;
/** num_ctx of every request, and llama-server's total -c: one context, shared by the slots where there are several. */
const CONTEXT = 4096;
const PREDICT = 128;
const MODEL = 'bench-1b';

/** What the section needs from bench.ts. */
export interface ParallelDefaultContext {
  runs: number;
  /** Peers (llama-server builds) by column, in table order. */
  peerCount: number;
  /** Starts the bench daemon; `numParallel` 0 leaves OLLAMA_NUM_PARALLEL unset. */
  startDaemon(numParallel: number): Promise<RunningServer>;
  /** Starts every peer with `-c total -np slots` (slots -1: llama-server's auto mode). */
  startPeers(slots: number, total: number): Promise<RunningServer[]>;
  /** Ollama `options` of a request (sampling, num_ctx, num_predict, threads, batch). */
  ollamaOptions(seed: number, numCtx: number, numPredict: number): Record<string, unknown>;
  /** llama-server /completion fields (sampling, n_predict). */
  llamaOptions(seed: number, numPredict: number): Record<string, unknown>;
  /** Adds a table row: the daemon's figure and one per peer (NaN where not measured). */
  row(metric: string, ours: number, theirs: number[], unit: string, compare: 'ratio' | 'none'): void;
}

interface Figures {
  aggregate: number;
  p99GapMs: number;
}

/** `runs` rounds (plus a warm-up) of CLIENTS concurrent streams through `send`. */
async function measure(runs: number, send: (seed: number, predict: number) => Promise<StreamTiming>): Promise<Figures> {
  const aggregates: number[] = [];
  const gapsMs: number[] = [];
  for (let r = 0; r <= Math.max(2, runs); r++) {
    const predict = r === 0 ? 8 : PREDICT;
    const started = performance.now();
    const all = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => send(7000 + i + r * 11, predict)));
    if (r === 0) continue; // warm-up: loads the model
    const last = Math.max(...all.map((t) => t.tokenTimes[t.tokenTimes.length - 1]));
    aggregates.push((all.reduce((sum, t) => sum + t.evalCount, 0) / (last - started)) * 1000);
    gapsMs.push(...all.flatMap((t) => gaps(t.tokenTimes)));
  }
  return { aggregate: median(aggregates), p99GapMs: percentile(gapsMs, 99) };
}

async function daemonFigures(ctx: ParallelDefaultContext, numParallel: number): Promise<Figures> {
  const daemon = await ctx.startDaemon(numParallel);
  try {
    return await measure(ctx.runs, (seed, predict) =>
      ollamaGenerate(daemon.base, {
        model: MODEL,
        prompt: words(seed, 24),
        raw: true,
        ...ctx.ollamaOptions(seed, CONTEXT, predict),
      }),
    );
  } finally {
    await stopServer(daemon);
  }
}

/** Runs the daemon at its default, the daemon with OLLAMA_NUM_PARALLEL=1, then the peers at `-np -1`; adds the rows. */
export async function parallelDefault(ctx: ParallelDefaultContext): Promise<void> {
  const auto = await daemonFigures(ctx, 0);
  const single = await daemonFigures(ctx, 1);
  const peers: Figures[] = [];
  const servers = await ctx.startPeers(-1, CONTEXT);
  try {
    for (const server of servers) {
      peers.push(
        await measure(ctx.runs, (seed, predict) =>
          llamaCompletion(server.base, { prompt: words(seed, 24), ...ctx.llamaOptions(seed, predict) }),
        ),
      );
    }
  } finally {
    for (const server of servers) await stopServer(server);
  }
  const none = Array.from({ length: ctx.peerCount }, () => NaN);
  ctx.row(
    `aggregate tok/s, ${CLIENTS} clients, defaults (daemon: 4 slots sharing num_ctx ${CONTEXT}; -np -1 -c ${CONTEXT})`,
    auto.aggregate,
    peers.map((p) => p.aggregate),
    'tok/s',
    'ratio',
  );
  ctx.row(
    `  p99 time between tokens, ${CLIENTS} clients, defaults (ms)`,
    auto.p99GapMs,
    peers.map((p) => p.p99GapMs),
    'ms',
    'ratio',
  );
  ctx.row(`aggregate tok/s, ${CLIENTS} clients, OLLAMA_NUM_PARALLEL=1`, single.aggregate, none, 'tok/s', 'none');
  ctx.row(`  defaults ÷ OLLAMA_NUM_PARALLEL=1`, auto.aggregate / single.aggregate, none, '×', 'none');
}
