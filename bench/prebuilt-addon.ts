/**
 * Bench section `prebuilt`: the daemon on the prebuilt package's addon (build/prebuilt-<backend>/bin: shared libraries,
 * ggml's CPU variants loaded at run time, `npm run pack:all`) against the from-source build (build/<backend>:
 * static, -march=native), same model (bench-1b Q4_0), same store, one daemon at a time, in the order source, prebuilt,
 * prebuilt, source (issue 24: decode and prompt eval ≥ 0.95× the source build). Rows: prompt eval tok/s (512-token
 * prompt), decode tok/s (128 tokens), time to first token, and prebuilt ÷ source for each.
 */
import { existsSync } from 'node:fs';
import { decodeRate, ttft, type StreamTiming } from './clients';
import { singleStreams } from './runner-modes';
import { stopServer, type RunningServer } from './servers';
import { median } from './stats';

/** What the section needs from bench.ts. */
export interface PrebuiltAddonContext {
  runs: number;
  /** The two addons compared. */
  sourceAddon: string;
  prebuiltAddon: string;
  /** Starts the bench daemon (one slot) with extra environment. */
  startDaemon(env: Record<string, string>): Promise<RunningServer>;
  options(seed: number, numCtx: number, numPredict: number): Record<string, unknown>;
  prompt(seed: number, tokens: number): Promise<string>;
  row(metric: string, value: number, unit: string, digits?: number): void;
}

interface Figures {
  promptTps: number;
  decodeTps: number;
  ttftMs: number;
}

/** One daemon on `addon`: a warm-up request (the model load), then `runs` timed ones, appended to `timings`. */
async function measure(ctx: PrebuiltAddonContext, addon: string, timings: StreamTiming[]): Promise<void> {
  const daemon = await ctx.startDaemon({ LLAMAD_ADDON: addon });
  try {
    timings.push(...(await singleStreams(ctx, daemon.base))); // the discarded first one loads the model
  } finally {
    await stopServer(daemon);
  }
}

function figures(timings: StreamTiming[]): Figures {
  return {
    promptTps: median(timings.map((t) => (t.promptCount / t.promptMs) * 1000)),
    decodeTps: median(timings.map(decodeRate)),
    ttftMs: median(timings.map(ttft)),
  };
}

/**
 * Runs the two addons A B B A and adds one row per figure and addon (medians over both passes) plus the ratio.
 * @throws Error when either addon is missing (build them with `npm install` and `npm run pack:all`)
 */
export async function prebuiltAddon(ctx: PrebuiltAddonContext): Promise<void> {
  for (const addon of [ctx.sourceAddon, ctx.prebuiltAddon]) {
    if (!existsSync(addon)) throw new Error(`bench prebuilt: ${addon} is missing (npm run pack:all builds it)`);
  }
  // A B B A: on this VM whichever daemon runs second measured faster (the runner section shows the same), so each
  // addon runs once early and once late, and the medians pool both passes.
  const sourceTimings: StreamTiming[] = [];
  const prebuiltTimings: StreamTiming[] = [];
  await measure(ctx, ctx.sourceAddon, sourceTimings);
  await measure(ctx, ctx.prebuiltAddon, prebuiltTimings);
  await measure(ctx, ctx.prebuiltAddon, prebuiltTimings);
  await measure(ctx, ctx.sourceAddon, sourceTimings);
  const source = figures(sourceTimings);
  const prebuilt = figures(prebuiltTimings);
  const rows: [keyof Figures, string, string, number][] = [
    ['promptTps', 'prompt eval tok/s (512-token prompt, server-reported)', 'tok/s', 1],
    ['decodeTps', 'decode tok/s (128 tokens, client-side)', 'tok/s', 1],
    ['ttftMs', 'time to first token, 512-token prompt (ms)', 'ms', 0],
  ];
  for (const [key, metric, unit, digits] of rows) {
    ctx.row(`${metric}: source build`, source[key], unit, digits);
    ctx.row(`${metric}: prebuilt package`, prebuilt[key], unit, digits);
    ctx.row(`  prebuilt ÷ source`, prebuilt[key] / source[key], '×', 2);
  }
}
