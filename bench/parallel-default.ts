/**
 * Bench section `parallel`: 4 concurrent clients against servers left at their defaults — the daemon without
 * OLLAMA_NUM_PARALLEL (4 slots sharing one num_ctx KV cache, docs/native.md "Parallel slots"), the daemon with
 * OLLAMA_NUM_PARALLEL=1 (one slot: the clients are served one after another), and each llama-server with `-np -1`
 * (its auto mode: 4 slots over a unified cache) and the same total context. Same model (bench-1b Q4_0) and threads.
 * The daemon also runs with OLLAMA_NUM_PARALLEL=4 (4 slots, each with its own KV stream of num_ctx cells: 4× the
 * memory) to show whether the default's shared cache costs speed. All servers run at once and take turns.
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

/** Who answers: the daemon with this OLLAMA_NUM_PARALLEL (0: unset), or the peer of this index. */
type Who = { daemon: number } | { peer: number };

/** One round of CLIENTS concurrent streams through `send`: aggregate tok/s and the gaps between tokens. */
async function round(send: (seed: number) => Promise<StreamTiming>, r: number): Promise<StreamTiming[]> {
  return Promise.all(Array.from({ length: CLIENTS }, (_, i) => send(7000 + i + r * 11)));
}

/**
 * Starts the daemons (default, OLLAMA_NUM_PARALLEL=4, OLLAMA_NUM_PARALLEL=1) and the peers at `-np -1` together and
 * lets them take turns round by round (order rotated each round, so that drift on a shared machine falls on all
 * alike); adds the rows.
 */
export async function parallelDefault(ctx: ParallelDefaultContext): Promise<void> {
  const servers: { who: Who; server: RunningServer }[] = [];
  const results = new Map<RunningServer, { aggregates: number[]; gaps: number[] }>();
  try {
    for (const n of [0, 4, 1]) servers.push({ who: { daemon: n }, server: await ctx.startDaemon(n) });
    (await ctx.startPeers(-1, CONTEXT)).forEach((server, i) => servers.push({ who: { peer: i }, server }));
    for (const { server } of servers) results.set(server, { aggregates: [], gaps: [] });
    for (let r = 0; r <= Math.max(2, ctx.runs); r++) {
      const k = r % servers.length;
      for (const { who, server } of [...servers.slice(k), ...servers.slice(0, k)]) {
        const predict = r === 0 ? 8 : PREDICT; // round 0 loads the model and warms up
        const started = performance.now();
        const all = await round(
          (seed) =>
            'peer' in who
              ? llamaCompletion(server.base, { prompt: words(seed, 24), ...ctx.llamaOptions(seed, predict) })
              : ollamaGenerate(server.base, {
                  model: MODEL,
                  prompt: words(seed, 24),
                  raw: true,
                  ...ctx.ollamaOptions(seed, CONTEXT, predict),
                }),
          r,
        );
        if (r === 0) continue;
        const last = Math.max(...all.map((t) => t.tokenTimes[t.tokenTimes.length - 1]));
        const got = results.get(server);
        got?.aggregates.push((all.reduce((sum, t) => sum + t.evalCount, 0) / (last - started)) * 1000);
        got?.gaps.push(...all.flatMap((t) => gaps(t.tokenTimes)));
      }
    }
  } finally {
    for (const { server } of servers) await stopServer(server);
  }
  const figures = (match: (who: Who) => boolean): Figures => {
    const got = results.get(servers.find((x) => match(x.who))?.server as RunningServer);
    return { aggregate: median(got?.aggregates ?? []), p99GapMs: percentile(got?.gaps ?? [], 99) };
  };
  const daemon = (n: number) => figures((w) => 'daemon' in w && w.daemon === n);
  const auto = daemon(0);
  const separate = daemon(4);
  const single = daemon(1);
  const peers = Array.from({ length: ctx.peerCount }, (_, i) => figures((w) => 'peer' in w && w.peer === i));
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
  ctx.row(
    `aggregate tok/s, ${CLIENTS} clients, OLLAMA_NUM_PARALLEL=4 (4 KV streams of ${CONTEXT})`,
    separate.aggregate,
    none,
    'tok/s',
    'none',
  );
  ctx.row(`  defaults ÷ OLLAMA_NUM_PARALLEL=4`, auto.aggregate / separate.aggregate, none, '×', 'none');
  ctx.row(`aggregate tok/s, ${CLIENTS} clients, OLLAMA_NUM_PARALLEL=1`, single.aggregate, none, 'tok/s', 'none');
  ctx.row(`  defaults ÷ OLLAMA_NUM_PARALLEL=1`, auto.aggregate / single.aggregate, none, '×', 'none');
}
