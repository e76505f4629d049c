/**
 * What the parts of bench section `speculative` share (bench/speculative.ts, speculative-pair.ts, speculative-api.ts):
 * the context bench.ts hands them, the copy prompt, and one variant's measurement on the daemon (through
 * /api/generate) and on each llama-server peer (through /completion), as server-reported decode rates.
 */
import type { NativeBinding } from '../binding';
import { llamaCompletion, ollamaGenerate, type StreamTiming } from './clients';
import { stopServer, type RunningServer } from './servers';
import { median } from './stats';

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

/**
 * The daemon's figures for a variant: a short request loads the model, then `runs` greedy requests (raw prompt);
 * the acceptance comes from llamad_draft_tokens_total / llamad_draft_accepted_tokens_total across them (NaN when
 * nothing was drafted). Unloads the model afterwards.
 */
export async function daemonFigures(
  ctx: SpeculativeContext,
  base: string,
  v: Variant,
  w: Workload = COPY_WORKLOAD,
): Promise<Figures> {
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
  await send(4); // loads the model
  const before = await scrape();
  const timings: StreamTiming[] = [];
  for (let r = 0; r < Math.max(1, ctx.runs); r++) timings.push(await send(w.predict));
  const after = await scrape();
  const label = `${v.model}:latest`;
  const delta = (name: string) => counter(after, name, label) - counter(before, name, label);
  const drafted = delta('llamad_draft_tokens_total');
  await ctx.post(`${base}/api/generate`, { model: v.model, keep_alive: 0 });
  return {
    rate: median(timings.map(daemonRate)),
    acceptance: drafted > 0 ? (delta('llamad_draft_accepted_tokens_total') / drafted) * 100 : NaN,
    tokens: median(timings.map((t) => t.evalCount)),
  };
}

/**
 * Each peer's figures for a variant: started with the variant's arguments, a short request first, then `runs`
 * greedy requests through /completion; the acceptance from its timings' draft_n / draft_n_accepted (NaN when it
 * drafted nothing). Stops the peers afterwards.
 */
export async function peerFigures(
  ctx: SpeculativeContext,
  v: Variant,
  w: Workload = COPY_WORKLOAD,
): Promise<Figures[]> {
  const body = { prompt: w.prompt, n_predict: w.predict, temperature: 0, cache_prompt: true, ...w.peerBody };
  const servers = await ctx.startPeers(v.peerArgs, v.peerModel);
  const out: Figures[] = [];
  try {
    for (const server of servers) {
      await llamaCompletion(server.base, { ...body, n_predict: 4 });
      const timings: StreamTiming[] = [];
      for (let r = 0; r < Math.max(1, ctx.runs); r++) timings.push(await llamaCompletion(server.base, body));
      const drafted = timings.reduce((n, t) => n + (t.draftN ?? 0), 0);
      const accepted = timings.reduce((n, t) => n + (t.draftAccepted ?? 0), 0);
      out.push({
        rate: median(timings.map(llamaRate)),
        acceptance: drafted > 0 ? (accepted / drafted) * 100 : NaN,
        tokens: median(timings.map((t) => t.evalCount)),
      });
    }
  } finally {
    for (const server of servers) await stopServer(server);
  }
  return out;
}

/**
 * The two rows under a speculative variant's tok/s row: its rate ÷ the same side's rate without speculation, and
 * the share of drafted tokens accepted (%, NaN = none drafted), for the daemon (`ours`) and each peer (`theirs`).
 */
export function gainRows(
  ctx: Pick<SpeculativeContext, 'row'>,
  indent: string,
  ours: { spec: Figures; plain: Figures },
  theirs: { spec: Figures[]; plain: Figures[] },
): void {
  ctx.row(
    `${indent}÷ no speculation`,
    ours.spec.rate / ours.plain.rate,
    theirs.spec.map((f, p) => f.rate / theirs.plain[p].rate),
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
