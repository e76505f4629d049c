/**
 * Bench section `runner`: the daemon with each model in a runner process (LLAMAD_RUNNER=process, the default) against
 * the in-process runner (LLAMAD_RUNNER=inprocess), same model (bench-1b Q4_0), same store, one daemon at a time.
 * Rows: cold start (request → first token, model not loaded), prompt eval and decode tok/s, time to first token,
 * 8-stream aggregate tok/s and p99 time between tokens, resident memory of the daemon plus its runner processes.
 */
import { performance } from 'node:perf_hooks';
import { decodeRate, ollamaGenerate, ttft, type StreamTiming } from './clients';
import { words } from './prompts';
import { readTreeRss, stopServer, type RunningServer } from './servers';
import { gaps, median, percentile } from './stats';

/** What the section needs from bench.ts. */
export interface RunnerModesContext {
  runs: number;
  /** Starts the bench daemon with `numParallel` slots and extra environment. */
  startDaemon(numParallel: number, env: Record<string, string>): Promise<RunningServer>;
  /** Ollama `options` of a request (sampling, num_ctx, num_predict, threads, batch). */
  options(seed: number, numCtx: number, numPredict: number): Record<string, unknown>;
  /** A prompt of about `tokens` tokens (seeded). */
  prompt(seed: number, tokens: number): Promise<string>;
  /** Adds a table row (daemon column only). */
  row(metric: string, value: number, unit: string, digits?: number): void;
  /** Pages the model file into the page cache (cold start measures load work, not the disk). */
  warm(): void;
}

const MiB = 1024 * 1024;
const MODEL = 'bench-1b';

/** The figures of one runner mode. */
interface ModeFigures {
  coldStartMs: number;
  promptTps: number;
  decodeTps: number;
  ttftMs: number;
  aggregate8: number;
  p99GapMs: number;
  rssMiB: number;
}

/**
 * The single-stream requests of a bench section: `runs + 1` streamed 128-token generations after a ≈512-token prompt
 * (seeded per run), one at a time; the first is discarded (it may load the model or warm caches).
 */
export async function singleStreams(
  ctx: Pick<RunnerModesContext, 'runs' | 'options' | 'prompt'>,
  base: string,
): Promise<StreamTiming[]> {
  const timings: StreamTiming[] = [];
  for (let r = 0; r <= ctx.runs; r++) {
    const t = await ollamaGenerate(base, {
      model: MODEL,
      prompt: await ctx.prompt(300 + r, 511),
      raw: true,
      ...ctx.options(r, 4096, 128),
    });
    if (r > 0) timings.push(t);
  }
  return timings;
}

async function measure(ctx: RunnerModesContext, mode: string): Promise<ModeFigures> {
  const env = { LLAMAD_RUNNER: mode };
  const single: StreamTiming[] = [];
  let coldStartMs = NaN;
  let rssMiB = NaN;
  {
    ctx.warm();
    const daemon = await ctx.startDaemon(1, env);
    try {
      const first = await ollamaGenerate(daemon.base, {
        model: MODEL,
        prompt: 'Hello',
        raw: true,
        ...ctx.options(1, 4096, 1),
      });
      coldStartMs = ttft(first);
      single.push(...(await singleStreams(ctx, daemon.base)));
      rssMiB = readTreeRss(daemon.child.pid ?? 0).total / MiB;
    } finally {
      await stopServer(daemon);
    }
  }
  const aggregates: number[] = [];
  const gapsMs: number[] = [];
  {
    const daemon = await ctx.startDaemon(8, env);
    try {
      for (let r = 0; r <= Math.max(2, Math.ceil(ctx.runs / 2)); r++) {
        const predict = r === 0 ? 8 : 128;
        const started = performance.now();
        const all = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            ollamaGenerate(daemon.base, {
              model: MODEL,
              prompt: words(5000 + i + r * 7, 24),
              raw: true,
              ...ctx.options(i, 1024, predict),
            }),
          ),
        );
        if (r === 0) continue;
        const last = Math.max(...all.map((t) => t.tokenTimes[t.tokenTimes.length - 1]));
        aggregates.push((all.reduce((sum, t) => sum + t.evalCount, 0) / (last - started)) * 1000);
        gapsMs.push(...all.flatMap((t) => gaps(t.tokenTimes)));
      }
    } finally {
      await stopServer(daemon);
    }
  }
  return {
    coldStartMs,
    promptTps: median(single.map((t) => (t.promptCount / t.promptMs) * 1000)),
    decodeTps: median(single.map(decodeRate)),
    ttftMs: median(single.map(ttft)),
    aggregate8: median(aggregates),
    p99GapMs: percentile(gapsMs, 99),
    rssMiB,
  };
}

/** Runs both modes (in-process first, then process) and adds one row per figure and mode, plus the ratio. */
export async function runnerModes(ctx: RunnerModesContext): Promise<void> {
  const inprocess = await measure(ctx, 'inprocess');
  const processRunner = await measure(ctx, 'process');
  const rows: [keyof ModeFigures, string, string, number][] = [
    ['promptTps', 'prompt eval tok/s (512-token prompt, server-reported)', 'tok/s', 1],
    ['decodeTps', 'decode tok/s (128 tokens, client-side)', 'tok/s', 1],
    ['aggregate8', 'aggregate tok/s, 8 streams', 'tok/s', 1],
    ['p99GapMs', 'p99 time between tokens, 8 streams (ms)', 'ms', 1],
    ['ttftMs', 'time to first token, 512-token prompt (ms)', 'ms', 0],
    ['coldStartMs', 'cold start: model not loaded → first token (ms)', 'ms', 0],
    ['rssMiB', 'resident memory, daemon + runner processes (MiB)', 'MiB', 0],
  ];
  for (const [key, metric, unit, digits] of rows) {
    ctx.row(`${metric}: in-process runner`, inprocess[key], unit, digits);
    ctx.row(`${metric}: process runner`, processRunner[key], unit, digits);
    ctx.row(`  process ÷ in-process`, processRunner[key] / inprocess[key], '×', 2);
  }
}
