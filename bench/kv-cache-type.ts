/**
 * Bench section `kv-cache`: the KV cache type (OLLAMA_KV_CACHE_TYPE) at q8_0 against f16, both with flash attention
 * on (OLLAMA_FLASH_ATTENTION=1, which a quantized cache needs), bench-1b Q4_0, single stream: the loaded model's size
 * in /api/ps (weights + KV cache + compute buffers) and prompt eval / decode speed (≈512-token prompt, 128 tokens,
 * num_ctx 4096), run A B B A (f16, q8_0, q8_0, f16) with the medians of both passes.
 */
import { decodeRate, type StreamTiming } from './clients';
import { singleStreams } from './runner-modes';
import { stopServer, type RunningServer } from './servers';
import { median } from './stats';

/** What the section needs from bench.ts. */
export interface KvCacheContext {
  runs: number;
  startDaemon(env: Record<string, string>): Promise<RunningServer>;
  options(seed: number, numCtx: number, numPredict: number): Record<string, unknown>;
  prompt(seed: number, tokens: number): Promise<string>;
  row(metric: string, value: number, unit: string, digits?: number): void;
}

interface Pass {
  timings: StreamTiming[];
  sizeBytes: number;
}

async function pass(ctx: KvCacheContext, type: 'f16' | 'q8_0'): Promise<Pass> {
  const daemon = await ctx.startDaemon({ OLLAMA_FLASH_ATTENTION: '1', OLLAMA_KV_CACHE_TYPE: type });
  try {
    const timings = await singleStreams(ctx, daemon.base);
    const ps = (await (await fetch(`${daemon.base}/api/ps`)).json()) as { models: { size: number }[] };
    return { timings, sizeBytes: ps.models[0]?.size ?? NaN };
  } finally {
    await stopServer(daemon);
  }
}

/** Runs f16, q8_0, q8_0, f16 and adds the rows: size, prompt eval and decode of each, and q8_0 against f16. */
export async function kvCacheType(ctx: KvCacheContext): Promise<void> {
  const passes: Record<'f16' | 'q8_0', Pass[]> = { f16: [], q8_0: [] };
  for (const type of ['f16', 'q8_0', 'q8_0', 'f16'] as const) passes[type].push(await pass(ctx, type));
  const MiB = 1024 * 1024;
  const figures = (type: 'f16' | 'q8_0') => {
    const timings = passes[type].flatMap((p) => p.timings);
    return {
      sizeMiB: median(passes[type].map((p) => p.sizeBytes)) / MiB,
      promptTps: median(timings.map((t) => (t.promptCount / t.promptMs) * 1000)),
      decodeTps: median(timings.map(decodeRate)),
    };
  };
  const f16 = figures('f16');
  const q8 = figures('q8_0');
  ctx.row('loaded size (/api/ps), num_ctx 4096, f16 KV', f16.sizeMiB, 'MiB');
  ctx.row('loaded size (/api/ps), num_ctx 4096, q8_0 KV', q8.sizeMiB, 'MiB');
  ctx.row('  saved by q8_0', f16.sizeMiB - q8.sizeMiB, 'MiB');
  ctx.row('prompt eval tok/s, f16 KV', f16.promptTps, 'tok/s');
  ctx.row('prompt eval tok/s, q8_0 KV', q8.promptTps, 'tok/s');
  ctx.row('  q8_0 ÷ f16', q8.promptTps / f16.promptTps, '×', 2);
  ctx.row('decode tok/s, f16 KV', f16.decodeTps, 'tok/s');
  ctx.row('decode tok/s, q8_0 KV', q8.decodeTps, 'tok/s');
  ctx.row('  q8_0 ÷ f16', q8.decodeTps / f16.decodeTps, '×', 2);
}
