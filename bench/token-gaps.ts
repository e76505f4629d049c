/**
 * Bench section `gaps` (issue 35 item 4): the time between tokens of concurrent streams, for the daemon with its
 * default process runner, the daemon with the in-process runner (LLAMAD_RUNNER=inprocess) and each llama-server peer,
 * at 1, 4 and 8 streams (`--streams`), bench-1b Q4_0, greedy, 128 tokens per stream, one slot per stream
 * (`OLLAMA_NUM_PARALLEL=N`, `-np N`, 1024 cells per slot).
 *
 * All servers of a stream count run at once (each idle while another is measured) and take turns round by round in
 * an order rotated every round, so that drift on a shared machine (another tenant of the VM host, a busy memory bus)
 * falls on every server alike; the runner section measured the two runners one after the other, which put a
 * minute-scale drift between them. Enough rounds are run for ≥ 2,000 gaps per server, so a p99 is the 20th largest
 * gap of several rounds, not of one burst.
 */
import { performance } from 'node:perf_hooks';
import { llamaCompletion, ollamaGenerate, type StreamTiming } from './clients';
import { words } from './prompts';
import { stopServer, type RunningServer } from './servers';
import { gaps, median, pairedRatio, percentile } from './stats';

/** What the section needs from bench.ts. */
export interface TokenGapsContext {
  runs: number;
  /** Stream counts to measure (the bench's `--streams`). */
  streams: number[];
  peerCount: number;
  /** Starts the bench daemon with `numParallel` slots and extra environment. */
  startDaemon(numParallel: number, env: Record<string, string>): Promise<RunningServer>;
  /** Starts every peer with `slots` slots of `slotCtx` cells each. */
  startPeers(slots: number, slotCtx: number): Promise<RunningServer[]>;
  /** Ollama `options` of a daemon request and the body fields of a llama-server /completion request. */
  ollamaOptions(seed: number, numCtx: number, numPredict: number): Record<string, unknown>;
  llamaOptions(seed: number, numPredict: number): Record<string, unknown>;
  /** Adds a row: the daemon's figure (process runner) and one per peer (NaN where not measured). */
  row(metric: string, ours: number, theirs: number[], unit: string, digits: number, compare: 'ratio' | 'none'): void;
}

const MODEL = 'bench-1b';
const SLOT_CTX = 1024;
const PREDICT = 128;
/** Gaps wanted per server and stream count (127 per stream and round). */
const MIN_GAPS = 2000;

/** A server of the section: the two daemons, then the peers by index. */
type Who = 'process' | 'inprocess' | number;

interface Collected {
  gaps: number[];
  aggregates: number[];
}

async function round(
  ctx: TokenGapsContext,
  base: string,
  who: Who,
  n: number,
  r: number,
  predict: number,
): Promise<StreamTiming[]> {
  return Promise.all(
    Array.from({ length: n }, (_, i) => {
      const prompt = words(7000 + n * 100 + i + r * 7, 24);
      return typeof who === 'number'
        ? llamaCompletion(base, { prompt, ...ctx.llamaOptions(i, predict) })
        : ollamaGenerate(base, { model: MODEL, prompt, raw: true, ...ctx.ollamaOptions(i, SLOT_CTX, predict) });
    }),
  );
}

/** Measures every server at `n` streams; the servers are started here and stopped before it returns. */
async function measureAt(ctx: TokenGapsContext, n: number): Promise<Map<Who, Collected>> {
  const servers = new Map<Who, RunningServer>();
  try {
    servers.set('process', await ctx.startDaemon(n, {}));
    servers.set('inprocess', await ctx.startDaemon(n, { LLAMAD_RUNNER: 'inprocess' }));
    (await ctx.startPeers(n, SLOT_CTX)).forEach((p, i) => servers.set(i, p));
    const order = [...servers.keys()];
    const out = new Map<Who, Collected>(order.map((w) => [w, { gaps: [], aggregates: [] }]));
    const rounds = Math.max(ctx.runs, Math.ceil(MIN_GAPS / ((PREDICT - 1) * n)));
    for (let r = 0; r <= rounds; r++) {
      const k = r % order.length;
      for (const who of [...order.slice(k), ...order.slice(0, k)]) {
        const base = servers.get(who)?.base ?? '';
        const started = performance.now();
        const all = await round(ctx, base, who, n, r, r === 0 ? 8 : PREDICT); // round 0 loads and warms up
        if (r === 0) continue;
        const last = Math.max(...all.map((t) => t.tokenTimes[t.tokenTimes.length - 1]));
        const collected = out.get(who);
        collected?.aggregates.push((all.reduce((sum, t) => sum + t.evalCount, 0) / (last - started)) * 1000);
        collected?.gaps.push(...all.flatMap((t) => gaps(t.tokenTimes)));
      }
    }
    return out;
  } finally {
    for (const server of servers.values()) await stopServer(server);
  }
}

/**
 * Runs the section: for each stream count, p50 and p99 time between tokens and the aggregate tok/s of the daemon
 * (process runner) against each peer (also as the median of the rounds' ratios), the in-process runner's figures,
 * and process ÷ in-process.
 */
export async function tokenGaps(ctx: TokenGapsContext): Promise<void> {
  for (const n of ctx.streams) {
    const got = await measureAt(ctx, n);
    const of = (who: Who): Collected => got.get(who) ?? { gaps: [], aggregates: [] };
    const peers = Array.from({ length: ctx.peerCount }, (_, i) => of(i));
    const label = `${n} stream${n > 1 ? 's' : ''}`;
    const nan = peers.map(() => NaN);
    ctx.row(
      `aggregate tok/s, ${label}, process runner`,
      median(of('process').aggregates),
      peers.map((p) => median(p.aggregates)),
      'tok/s',
      1,
      'ratio',
    );
    // Each round measured every server once, in a rotated order: a round's ratio compares the same minutes.
    ctx.row(
      `  aggregate, process runner ÷ this peer: median of the rounds' ratios, ${label}`,
      NaN,
      peers.map((p) => pairedRatio(of('process').aggregates, p.aggregates)),
      '×',
      2,
      'none',
    );
    for (const p of [50, 99]) {
      const proc = percentile(of('process').gaps, p);
      const inproc = percentile(of('inprocess').gaps, p);
      ctx.row(
        `  p${p} time between tokens, ${label}, process runner (ms)`,
        proc,
        peers.map((x) => percentile(x.gaps, p)),
        'ms',
        1,
        'ratio',
      );
      ctx.row(`  p${p} time between tokens, ${label}, in-process runner (ms)`, inproc, nan, 'ms', 1, 'none');
      ctx.row(`  p${p}: process ÷ in-process, ${label}`, proc / inproc, nan, '×', 2, 'none');
    }
    ctx.row(`  gaps per server, ${label}`, of('process').gaps.length, nan, 'gaps', 0, 'none');
  }
}
