/**
 * Bench section `fairness` (issue 33 item 4): fair queuing at a loaded model's slot gate. One daemon at its default
 * slots (4 sharing num_ctx) with two API keys, i.e. two principals of weight 1 (LLAMAD_API_KEYS). Tenant A queues
 * {@link A_REQUESTS} streamed requests at once; once the daemon holds them all (running or queued, from /api/ps),
 * tenant B sends one. Measured per run, same model (bench-1b Q4_0) and threads:
 * - B's time to first token (client-side) on the idle model and behind A's queue, against the bound of the issue:
 *   2 × idle TTFT + one request's decode time: the time an A request that B waited behind (one that got its first
 *   token before B's) held its slot, prompt + generation as the daemon reports it, the longest of those;
 * - A's aggregate throughput (A's tokens ÷ (A's last token − A's requests sent)) with B and alone (the same 32
 *   requests without B), so the cost of serving B early shows;
 * - how many of A's requests that had no first token yet when B was sent got theirs before B (in arrival order it
 *   would be all of them; with the gate, the ones already in a slot and those let in with B).
 */
import { performance } from 'node:perf_hooks';
import { ollamaGenerate, ttft, type StreamTiming } from './clients';
import { words } from './prompts';
import { stopServer, type RunningServer } from './servers';
import { median } from './stats';

/** Tenant A's requests, sent at once. */
const A_REQUESTS = 32;
/** Tokens each request generates (small: the figure is about waiting, and 33 requests must fit in a run). */
const PREDICT = 32;
/** num_ctx of every request: the 4 default slots share it. */
const CONTEXT = 4096;
const MODEL = 'bench-1b';
/** The two tenants' API keys (LLAMAD_API_KEYS): two principals, no policy, so weight 1 each. */
const KEY_A = 'bench-fairness-tenant-a';
const KEY_B = 'bench-fairness-tenant-b';

/** What the section needs from bench.ts. */
export interface FairnessContext {
  runs: number;
  /** Starts the bench daemon at its default slots with these environment variables. */
  startDaemon(env: Record<string, string>): Promise<RunningServer>;
  /** Ollama `options` of a request (sampling, num_ctx, num_predict, threads, batch). */
  ollamaOptions(seed: number, numCtx: number, numPredict: number): Record<string, unknown>;
  /** Adds a daemon-only table row. */
  row(metric: string, value: number, unit: string, target?: string, digits?: number): void;
}

interface Run {
  idleTtft: number;
  loadedTtft: number;
  /** The longest time an A request that B waited behind held its slot (prompt + generation, server-reported), ms. */
  slotMs: number;
  withB: number;
  alone: number;
  aheadOfB: number;
  waitingAtB: number;
}

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

/** Aggregate tok/s of a set of streams sent at `sentAt`. */
function aggregate(all: StreamTiming[], sentAt: number): number {
  const last = Math.max(...all.map((t) => t.tokenTimes[t.tokenTimes.length - 1] ?? t.endAt));
  return (all.reduce((sum, t) => sum + t.evalCount, 0) / (last - sentAt)) * 1000;
}

/** Waits until the daemon holds `count` requests of the model (slots busy + queued) or `done()` of them ended. */
async function untilHeld(base: string, count: number, done: () => number): Promise<void> {
  const deadline = performance.now() + 120_000;
  for (;;) {
    const res = await fetch(`${base}/api/ps`, { headers: auth(KEY_A) });
    const body = (await res.json()) as { models: { parallel?: { slots_busy: number; queued: number } }[] };
    const p = body.models[0]?.parallel;
    if (p && p.slots_busy + p.queued + done() >= count) return;
    if (performance.now() > deadline) throw new Error('fairness: A’s requests never all reached the model');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function oneRun(ctx: FairnessContext, base: string, r: number): Promise<Run> {
  const send = (key: string, seed: number) =>
    ollamaGenerate(
      base,
      { model: MODEL, prompt: words(seed, 24), raw: true, ...ctx.ollamaOptions(seed, CONTEXT, PREDICT) },
      auth(key),
    );
  const idle = [await send(KEY_B, 9000 + r), await send(KEY_B, 9100 + r), await send(KEY_B, 9200 + r)];
  const idleTtft = median(idle.map(ttft));

  // A alone.
  let sentAt = performance.now();
  const alone = aggregate(
    await Promise.all(Array.from({ length: A_REQUESTS }, (_, i) => send(KEY_A, 10_000 + r * 100 + i))),
    sentAt,
  );

  // A, then B once the daemon holds all of A's.
  let done = 0;
  sentAt = performance.now();
  const runsA = Array.from({ length: A_REQUESTS }, (_, i) =>
    send(KEY_A, 20_000 + r * 100 + i).then((t) => {
      done++;
      return t;
    }),
  );
  await untilHeld(base, A_REQUESTS, () => done);
  const b = await send(KEY_B, 9300 + r);
  const a = await Promise.all(runsA);
  const waiting = a.filter((t) => t.tokenTimes[0] > b.sentAt);
  const ahead = a.filter((t) => t.tokenTimes[0] < b.tokenTimes[0]);
  return {
    idleTtft,
    loadedTtft: ttft(b),
    slotMs: Math.max(...(ahead.length > 0 ? ahead : a).map((t) => t.promptMs + t.evalMs)),
    withB: aggregate(a, sentAt),
    alone,
    aheadOfB: waiting.filter((t) => t.tokenTimes[0] < b.tokenTimes[0]).length,
    waitingAtB: waiting.length,
  };
}

/** Runs the scenario `runs` times (after a warm-up load) and adds the rows (medians over the runs). */
export async function fairness(ctx: FairnessContext): Promise<void> {
  const daemon = await ctx.startDaemon({ LLAMAD_API_KEYS: `${KEY_A},${KEY_B}` });
  const runs: Run[] = [];
  try {
    await ollamaGenerate(
      daemon.base,
      { model: MODEL, prompt: 'Hello', raw: true, ...ctx.ollamaOptions(1, CONTEXT, 4) },
      auth(KEY_A),
    );
    for (let r = 1; r <= Math.max(1, ctx.runs); r++) runs.push(await oneRun(ctx, daemon.base, r));
  } finally {
    await stopServer(daemon);
  }
  const m = (f: (x: Run) => number) => median(runs.map(f));
  const bound = m((x) => 2 * x.idleTtft + x.slotMs);
  ctx.row(
    `B's time to first token, idle model (ms)`,
    m((x) => x.idleTtft),
    'ms',
    '',
    0,
  );
  ctx.row(
    `B's time to first token behind A's ${A_REQUESTS} queued requests (ms)`,
    m((x) => x.loadedTtft),
    'ms',
    '',
    0,
  );
  ctx.row(
    `  one A request's time in a slot, the longest B waited behind (ms, server-reported)`,
    m((x) => x.slotMs),
    'ms',
    '',
    0,
  );
  ctx.row(`  bound: 2 × idle TTFT + one request's time in a slot (ms)`, bound, 'ms', '', 0);
  ctx.row(
    `  B's TTFT under load ÷ bound`,
    m((x) => x.loadedTtft / (2 * x.idleTtft + x.slotMs)),
    '×',
    '≤ 1',
    2,
  );
  ctx.row(
    `  A's requests without a first token when B came that got one before B (of ${m((x) => x.waitingAtB)})`,
    m((x) => x.aheadOfB),
    'requests',
    '',
    0,
  );
  ctx.row(
    `A's aggregate tok/s, ${A_REQUESTS} requests, alone`,
    m((x) => x.alone),
    'tok/s',
    '',
    1,
  );
  ctx.row(
    `A's aggregate tok/s, ${A_REQUESTS} requests, with B`,
    m((x) => x.withB),
    'tok/s',
    '',
    1,
  );
  ctx.row(
    `  with B ÷ alone`,
    m((x) => x.withB / x.alone),
    '×',
    '≈ 1',
    2,
  );
}
