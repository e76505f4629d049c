/**
 * Bench section `prompt-cache`: returning to a conversation whose KV another conversation evicted, with the host-RAM
 * prompt cache (LLAMAD_CACHE_RAM at its default) and without it (LLAMAD_CACHE_RAM=0), the daemon with one slot
 * (OLLAMA_NUM_PARALLEL=1) on bench-1b Q4_0. Per round: conversation A (a prompt of `tokens` tokens, one answer), then
 * conversation B (as long, another text) takes the slot, then A again with its answer and one more turn; the row is
 * the median client-side time to first token of that return (docs/native.md "Host-RAM prompt cache").
 */
import { ollamaGenerate, postJson, ttft } from './clients';
import { textOfTokens, words } from './prompts';
import { stopServer, type RunningServer } from './servers';
import { median } from './stats';

const MODEL = 'bench-1b';
/** Tokens of an answer (A's first and its return). */
const PREDICT = 16;

/** What the section needs from bench.ts. */
export interface PromptCacheContext {
  runs: number;
  /** Prompt tokens of each conversation (8192 for the documented row; smaller for a smoke run). */
  tokens: number;
  /** Starts the bench daemon with OLLAMA_NUM_PARALLEL=1 and this extra environment. */
  startDaemon(env: Record<string, string>): Promise<RunningServer>;
  /** Ollama `options` of a request (sampling, num_ctx, num_predict, threads, batch). */
  ollamaOptions(seed: number, numCtx: number, numPredict: number): Record<string, unknown>;
  /** Adds a daemon-only table row. */
  row(metric: string, value: number, unit: string, target?: string, digits?: number): void;
}

/** Median TTFT (ms) of returning to an evicted conversation, over `runs` rounds after a warm-up one. */
async function returnTtft(ctx: PromptCacheContext, env: Record<string, string>): Promise<number> {
  const numCtx = Math.ceil((ctx.tokens + 4 * PREDICT + 128) / 256) * 256;
  const daemon = await ctx.startDaemon(env);
  try {
    const generate = async (seed: number, text: string) =>
      (
        await postJson(`${daemon.base}/api/generate`, {
          model: MODEL,
          prompt: text,
          raw: true,
          stream: false,
          ...ctx.ollamaOptions(seed, numCtx, PREDICT),
        })
      ).json as { response: string };
    await generate(0, 'Hello'); // loads the model: its /tokenize sizes the prompts
    const prompt = (seed: number) => textOfTokens(daemon.base, seed, ctx.tokens);
    const times: number[] = [];
    for (let r = 0; r <= Math.max(1, ctx.runs); r++) {
      // Fresh texts every round: nothing from an earlier round may match.
      const a = await prompt(9100 + r * 2);
      const answer = (await generate(r, a)).response;
      await generate(r, await prompt(9101 + r * 2)); // B takes the only slot
      const back = await ollamaGenerate(daemon.base, {
        model: MODEL,
        prompt: `${a}${answer}\n${words(9900 + r, 24)}`,
        raw: true,
        ...ctx.ollamaOptions(r, numCtx, PREDICT),
      });
      if (r > 0) times.push(ttft(back)); // round 0 warms up
    }
    return median(times);
  } finally {
    await stopServer(daemon);
  }
}

/** Runs the daemon with the RAM cache (default budget) and without it (LLAMAD_CACHE_RAM=0); adds the rows. */
export async function promptCache(ctx: PromptCacheContext): Promise<void> {
  const withCache = await returnTtft(ctx, {});
  const without = await returnTtft(ctx, { LLAMAD_CACHE_RAM: '0' });
  const what = `returning to an evicted ${ctx.tokens}-token conversation (OLLAMA_NUM_PARALLEL=1)`;
  ctx.row(`TTFT ${what}, LLAMAD_CACHE_RAM default (ms)`, withCache, 'ms');
  ctx.row(`  TTFT without the RAM cache, LLAMAD_CACHE_RAM=0 (ms)`, without, 'ms');
  ctx.row(`  with ÷ without`, withCache / without, '×', '≤ 0.1×', 3);
}
