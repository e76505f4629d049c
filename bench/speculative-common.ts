/**
 * What the parts of bench section `speculative` share (bench/speculative.ts, speculative-pair.ts, speculative-api.ts):
 * the context bench.ts hands them, the copy prompt, and the measurement of variants on the daemon (through
 * /api/generate) and on each llama-server peer (through /completion), as server-reported decode rates, all servers
 * running at once and taking turns request by request (takeTurns).
 */
import type { NativeBinding } from '../binding';
import { llamaCompletion, ollamaGenerate, type StreamTiming } from './clients';
import { stopServer, type RunningServer } from './servers';
import { median, pairedRatio } from './stats';

/** What the section needs from bench.ts. */
export interface SpeculativeContext {
  runs: number;
  threads: number;
  /** The target and the 2-layer draft, Q4_0 GGUF files. */
  targetFile: string;
  draftFile: string;
  /** The agreeing pair (scripts/test-model-specs.ts AGREEING_PAIRS.bench): the F16 target and its 1-layer draft. */
  agreeTargetFile: string;
  agreeDraftFile: string;
  startDaemon(): Promise<RunningServer>;
  /** Starts every peer (llama-server) on `model` (default the Q4_0 target) with these extra arguments. */
  startPeers(extra: string[], model?: string): Promise<RunningServer[]>;
  peerCount: number;
  /** POSTs JSON and returns the parsed answer; throws on a non-2xx status (bench/clients.ts postJson). */
  post(url: string, body: unknown): Promise<unknown>;
  binding(): NativeBinding;
  /** Adds a row: the daemon's figure and one per peer (NaN where not measured). */
  row(metric: string, ours: number, theirs: number[], unit: string, digits: number, compare: 'ratio' | 'none'): void;
}

/** Tokens generated per measured request, and each server's context (tokens). */
export const PREDICT = 128;
export const NUM_CTX = 2048;
export const TEXT =
  'The committee met on Tuesday to review the budget for the new library. After a long discussion, the members ' +
  "agreed to fund the reading room, the children's corner and a small cafe near the entrance, and asked the " +
  'architect to present revised drawings at the next meeting, together with a schedule for the works and an ' +
  'estimate of the running costs for the first three years.';
/** The copy task's answer: the text with one word changed. */
export const CHANGED = TEXT.replace('Tuesday', 'Wednesday');
export const COPY_PROMPT = `Repeat the following text exactly, but write "Wednesday" instead of "Tuesday".\n\n${TEXT}\n\n`;

/** One configuration measured on both sides: the daemon's model and request options, llama-server's arguments. */
export interface Variant {
  label: string;
  model: string;
  options: Record<string, unknown>;
  /** llama-server's arguments for the same. */
  peerArgs: string[];
  /** The file llama-server loads (default the Q4_0 target). */
  peerModel?: string;
}

/** What one request looks like on both sides: the prompt, the tokens to generate, more body fields (`format`). */
export interface Workload {
  prompt: string;
  predict: number;
  /** Added to the daemon's /api/generate body (e.g. `format`). */
  daemonBody?: Record<string, unknown>;
  /** Added to llama-server's /completion body (e.g. `json_schema`). */
  peerBody?: Record<string, unknown>;
}

/**
 * A side's figures: the median decode rate (tok/s), the share of drafted tokens accepted (%; NaN, printed "n/a", when
 * nothing was drafted), tokens generated.
 */
export interface Figures {
  rate: number;
  acceptance: number;
  /** Median tokens generated per measured request. */
  tokens: number;
  /** Each measured request's rate (tok/s), round by round: `rates[r]` of two players are requests of the same round. */
  rates: number[];
}

/** The copy prompt, 128 tokens, no constraint: the section's default workload. */
export const COPY_WORKLOAD: Workload = { prompt: COPY_PROMPT, predict: PREDICT };

/** A counter's sample for `model` in a Prometheus exposition text (0 when absent). */
function counter(text: string, name: string, model: string): number {
  const match = new RegExp(`^${name}\\{model="${model}"\\} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : 0;
}

/**
 * Server-side decode rates, tok/s, from each server's own timings: the daemon's eval_duration runs from the first
 * sampled token to the last (eval_count − 1 decodes); llama-server's predicted_ms covers all predicted_n tokens.
 */
function daemonRate(t: StreamTiming): number {
  return ((t.evalCount - 1) / t.evalMs) * 1000;
}
function llamaRate(t: StreamTiming): number {
  return (t.evalCount / t.evalMs) * 1000;
}

/** One measured request: its decode rate (tok/s), tokens drafted and accepted, tokens generated. */
export interface Sample {
  rate: number;
  drafted: number;
  accepted: number;
  tokens: number;
}

/** One server and variant as the section measures it: a warm-up (loads the model, fills caches), then requests. */
export interface Player {
  warm(): Promise<void>;
  run(): Promise<Sample>;
}

/** A side's figures from its samples: the median rate and tokens, the acceptance over all of them (NaN: none). */
export function figuresOf(samples: Sample[]): Figures {
  const drafted = samples.reduce((n, s) => n + s.drafted, 0);
  const accepted = samples.reduce((n, s) => n + s.accepted, 0);
  return {
    rate: median(samples.map((s) => s.rate)),
    acceptance: drafted > 0 ? (accepted / drafted) * 100 : NaN,
    tokens: median(samples.map((s) => s.tokens)),
    rates: samples.map((s) => s.rate),
  };
}

/**
 * Measures the players in turns: every one warms up, then `runs` rounds in which each sends one request, the order
 * rotated by one each round. Every ratio the section prints thus compares requests made in the same minutes: on a
 * shared host whose speed drifts by ±10 % over minutes, a variant measured after another would carry that drift.
 * Returns each player's figures, in the players' order.
 */
export async function takeTurns(players: Player[], runs: number): Promise<Figures[]> {
  for (const p of players) await p.warm();
  const samples: Sample[][] = players.map(() => []);
  for (let r = 0; r < Math.max(1, runs); r++) {
    for (let k = 0; k < players.length; k++) {
      const i = (k + r) % players.length;
      samples[i].push(await players[i].run());
    }
  }
  return samples.map(figuresOf);
}

/**
 * The daemon as a player of a variant: greedy requests through /api/generate (raw prompt, the variant's options,
 * the workload's body fields); the warm-up is a 4-token request that loads the model (kept loaded for 10 minutes).
 * Drafted and accepted tokens come from llamad_draft_tokens_total / llamad_draft_accepted_tokens_total around each
 * request (one request runs at a time).
 */
export function daemonPlayer(ctx: SpeculativeContext, base: string, v: Variant, w: Workload = COPY_WORKLOAD): Player {
  const scrape = async () => (await fetch(`${base}/metrics`)).text();
  const send = (predict: number) =>
    ollamaGenerate(base, {
      model: v.model,
      prompt: w.prompt,
      raw: true,
      keep_alive: '10m',
      ...w.daemonBody,
      options: { temperature: 0, num_ctx: NUM_CTX, num_predict: predict, num_thread: ctx.threads, ...v.options },
    });
  const label = `${v.model}:latest`;
  return {
    warm: async () => {
      await send(4);
    },
    run: async () => {
      const before = await scrape();
      const t = await send(w.predict);
      const after = await scrape();
      const delta = (name: string) => counter(after, name, label) - counter(before, name, label);
      return {
        rate: daemonRate(t),
        drafted: delta('llamad_draft_tokens_total'),
        accepted: delta('llamad_draft_accepted_tokens_total'),
        tokens: t.evalCount,
      };
    },
  };
}

/** A started llama-server as a player of a variant: greedy requests through /completion, its own draft timings. */
function peerPlayer(server: RunningServer, w: Workload): Player {
  const body = { prompt: w.prompt, n_predict: w.predict, temperature: 0, cache_prompt: true, ...w.peerBody };
  return {
    warm: async () => {
      await llamaCompletion(server.base, { ...body, n_predict: 4 });
    },
    run: async () => {
      const t = await llamaCompletion(server.base, body);
      return { rate: llamaRate(t), drafted: t.draftN ?? 0, accepted: t.draftAccepted ?? 0, tokens: t.evalCount };
    },
  };
}

/** Both sides' figures of a set of variants: ours[variant], theirs[variant][peer]. */
export interface SideBySide {
  ours: Figures[];
  theirs: Figures[][];
}

/**
 * Measures `ours` (one player per variant: the daemon, or the engine in this process) and every peer on `variants`,
 * all in turns (takeTurns): one llama-server per variant and peer, started together with the variant's arguments
 * and stopped at the end.
 */
export async function sideBySide(
  ctx: SpeculativeContext,
  ours: Player[],
  variants: Variant[],
  w: Workload = COPY_WORKLOAD,
): Promise<SideBySide> {
  const servers: RunningServer[][] = [];
  try {
    for (const v of variants) servers.push(await ctx.startPeers(v.peerArgs, v.peerModel));
    const figures = await takeTurns([...ours, ...servers.flat().map((server) => peerPlayer(server, w))], ctx.runs);
    const n = ours.length;
    return {
      ours: figures.slice(0, n),
      theirs: variants.map((_, i) => figures.slice(n + i * ctx.peerCount, n + (i + 1) * ctx.peerCount)),
    };
  } finally {
    for (const server of servers.flat()) await stopServer(server);
  }
}

/**
 * The daemon's players of `variants` (daemonPlayer) measured side by side with the peers on them. `daemonBase`: one
 * daemon for all, or one per variant (startDaemonsPerModel).
 */
export function daemonSideBySide(
  ctx: SpeculativeContext,
  daemonBase: string | string[],
  variants: Variant[],
  w: Workload = COPY_WORKLOAD,
): Promise<SideBySide> {
  const baseOf = (i: number) => (typeof daemonBase === 'string' ? daemonBase : daemonBase[i]);
  return sideBySide(
    ctx,
    variants.map((v, i) => daemonPlayer(ctx, baseOf(i), v, w)),
    variants,
    w,
  );
}

/**
 * One daemon per model of `variants` (`first`, already started, serves the first model; the others are started
 * here and added to `started` for the caller to stop), as every llama-server variant is a server of its own. The
 * daemon keeps one runner per weights file (Ollama's scheduler, reference/ollama-api.md §7): variants whose models
 * load the same weights with different DRAFTs would reload the runner at every turn of one daemon, and a draft
 * model's runner would start every request without its pair's acceptance record. Returns each variant's base URL.
 */
export async function startDaemonsPerModel(
  ctx: SpeculativeContext,
  variants: Variant[],
  first: RunningServer,
  started: RunningServer[],
): Promise<string[]> {
  const byModel = new Map<string, string>([[variants[0].model, first.base]]);
  for (const v of variants) {
    if (byModel.has(v.model)) continue;
    const daemon = await ctx.startDaemon();
    started.push(daemon);
    byModel.set(v.model, daemon.base);
  }
  return variants.map((v) => byModel.get(v.model) ?? first.base);
}

/**
 * The two rows under a speculative variant's tok/s row: its rate ÷ the same side's rate without speculation (the
 * median of the rounds' ratios, pairedRatio: both requests of a ratio were made in the same round), and the share of
 * drafted tokens accepted (%, NaN = none drafted), for the daemon (`ours`) and each peer (`theirs`).
 */
export function gainRows(
  ctx: Pick<SpeculativeContext, 'row'>,
  indent: string,
  ours: { spec: Figures; plain: Figures },
  theirs: { spec: Figures[]; plain: Figures[] },
): void {
  ctx.row(
    `${indent}÷ no speculation`,
    pairedRatio(ours.spec.rates, ours.plain.rates),
    theirs.spec.map((f, p) => pairedRatio(f.rates, theirs.plain[p].rates)),
    '×',
    2,
    'none',
  );
  ctx.row(
    `${indent}drafted tokens accepted (n/a: none drafted)`,
    ours.spec.acceptance,
    theirs.spec.map((f) => f.acceptance),
    '%',
    0,
    'none',
  );
}
