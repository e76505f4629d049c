/**
 * The benchmark's event-loop section (daemon only): a running stream's longest token gap while other requests do
 * heavy native work, the hostile suite's event-loop delay (bench/event-loop-hostile.ts) and the output parsers' cost
 * on a 4,000-token answer with tools (bench/parser-cost.ts).
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { REPO_ROOT } from '../src/config';
import { HOSTILE_CASES } from '../test/utils/hostile-cases';
import { encodePng } from '../test/utils/png';
import { forEachLine, postJson } from './clients';
import { hostileEventLoop, type LoopDelayFigures } from './event-loop-hostile';
import { ensureModel, startBenchDaemon, warmPageCache } from './harness';
import { ANSWER_TOKENS, chatStreamGaps, parserCost } from './parser-cost';
import { notes, row } from './report';
import { stopServer } from './servers';
import { log, MiB, MODEL_Q4, OUT_DIR, sampling, sh, type Settings } from './settings';
import { fmt, median } from './stats';

// ---------------------------------------------------------------------------------------------------------------
// Event loop: a running stream's longest token gap while other requests do heavy native work

export const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'models');
/** Slots of the daemon in the event-loop section: the second model's context is created with this many. */
export const EVL_SLOTS = 8;
/** Side of the square PNG sent to the vision model (pixels). */
export const EVL_IMAGE_SIDE = 2048;

/** A streamed /api/generate whose token arrival times can be read while it runs, and that can be aborted. */
export function liveStream(
  base: string,
  body: Record<string, unknown>,
): { times: number[]; end: { reason: string; finished: boolean }; stop: () => Promise<void> } {
  const times: number[] = [];
  const end = { reason: '', finished: false };
  const abort = new AbortController();
  const done = (async () => {
    const res = await fetch(`${base}/api/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
      signal: abort.signal,
    });
    await forEachLine('stream', res, (line, at) => {
      const record = JSON.parse(line) as { response?: string; error?: string; done_reason?: string };
      if (record.error) throw new Error(`stream: ${record.error}`);
      if (record.done_reason) end.reason = record.done_reason;
      times.push(at);
    });
  })()
    .catch((err: unknown) => {
      if (!abort.signal.aborted) throw err;
    })
    .finally(() => {
      end.finished = true;
    });
  return {
    times,
    end,
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const end = (live: { end: { finished: boolean } }) => live.end.finished;

/**
 * The longest gap (ms) between consecutive token arrivals of `times` that overlaps [from, to], the window of the
 * disturbing request: the gap that starts before it ends and ends after it starts.
 */
export function longestGapIn(times: readonly number[], from: number, to: number): number {
  let longest = NaN;
  for (let i = 1; i < times.length; i++) {
    if (times[i] < from || times[i - 1] > to) continue;
    const gap = times[i] - times[i - 1];
    if (!(gap <= longest)) longest = gap;
  }
  return longest;
}

/** A large PNG that still compresses well (gradients plus a pattern): stb_image has to inflate every row. */
export function bigPng(side: number): Buffer {
  return encodePng(side, side, (x, y) => [x & 255, y & 255, (x ^ y) & 255]);
}

/**
 * Longest token gap of one running stream (tiny-qwen2-tools, 32k context, 8 slots) on the daemon: with nothing else going on,
 * while a second model loads (bench-1b-q4_0, a context of EVL_SLOTS slots × 4096), and while another client sends a large PNG
 * to a vision model (tiny-llama-spm + tiny-mmproj). Every native call that runs on the JS thread shows up as a gap.
 * Always one thread (`--threads` is ignored here).
 */
export async function eventLoop(settings: Settings): Promise<void> {
  // One decode thread for the stream (and the daemon): on a 2-core machine the disturbing work (a context creation,
  // an image decode) then has a core of its own, so a long gap means a blocked event loop, not a starved CPU.
  const s: Settings = { ...settings, threads: 1 };
  sh(process.execPath, [
    join(REPO_ROOT, 'dist', 'scripts', 'make-test-models.js'),
    '--only',
    'tiny-llama-spm.gguf,tiny-qwen2-tools.gguf,tiny-mmproj.gguf',
  ]);
  sh(process.execPath, [
    join(REPO_ROOT, 'dist', 'scripts', 'make-test-models.js'),
    '--only',
    'bench-1b-f16.gguf,bench-1b-q4_0.gguf',
  ]);
  const store = join(OUT_DIR, 'store-event-loop');
  const daemon = await startBenchDaemon(s, store, EVL_SLOTS);
  try {
    const base = daemon.base;
    const spm = join(FIXTURES, 'tiny-llama-spm.gguf');
    await ensureModel(base, store, 'evl-stream', join(FIXTURES, 'tiny-qwen2-tools.gguf'));
    const other = await ensureModel(base, store, 'evl-other', MODEL_Q4);
    const { json } = await postJson(`${base}/api/create`, {
      model: 'evl-vision',
      modelfile: `FROM ${spm}\nFROM ${join(FIXTURES, 'tiny-mmproj.gguf')}\n`,
      stream: false,
    });
    if ((json as { status?: string }).status !== 'success') {
      throw new Error(`create evl-vision: ${JSON.stringify(json)}`);
    }
    const png = bigPng(EVL_IMAGE_SIDE).toString('base64');
    const streamBody = (seed: number) => ({
      model: 'evl-stream',
      prompt: 'Once upon a time',
      raw: true,
      options: { ...sampling(seed), num_ctx: 32768, num_predict: 30000, num_thread: s.threads },
    });
    const tiny = { num_predict: 1, num_thread: s.threads };
    // Load the stream's and the vision model once: the vision window measures the image, not a model load.
    await postJson(`${base}/api/generate`, { ...streamBody(0), stream: false, options: { ...tiny, num_ctx: 32768 } });
    await postJson(`${base}/api/generate`, { model: 'evl-vision', prompt: 'hi', stream: false, options: tiny });

    const quiet: number[] = [];
    const loading: number[] = [];
    const imaging: number[] = [];
    const windows: number[][] = [[], []];
    for (let r = 0; r <= s.runs; r++) {
      const disturbances: [number[], number[], () => Promise<unknown>][] = [
        [quiet, [], () => sleep(500)],
        [
          loading,
          windows[0],
          () =>
            postJson(`${base}/api/generate`, {
              model: 'evl-other',
              prompt: 'hi',
              stream: false,
              options: { ...tiny, num_ctx: 4096 },
            }),
        ],
        [
          imaging,
          windows[1],
          () =>
            postJson(`${base}/api/generate`, {
              model: 'evl-vision',
              prompt: 'hi',
              images: [png],
              stream: false,
              options: tiny,
            }),
        ],
      ];
      for (const [out, window, disturb] of disturbances) {
        await postJson(`${base}/api/generate`, { model: 'evl-other', keep_alive: 0 });
        warmPageCache(other); // the window is the load work (mmap, context creation), not the disk
        const live = liveStream(base, streamBody(r));
        while (live.times.length < 20) await sleep(5);
        await sleep(50);
        const from = performance.now();
        await disturb();
        const to = performance.now();
        // The gap that spans the window ends with the first token after it.
        while (!end(live) && !(live.times[live.times.length - 1] > to)) await sleep(5);
        await live.stop();
        const lastToken = live.times[live.times.length - 1];
        if (!(lastToken > to)) {
          throw new Error(
            `event loop: the stream ended before the disturbing request did (${live.times.length} tokens, ${(lastToken - live.times[0]).toFixed(0)} ms, window ${(to - from).toFixed(0)} ms, done_reason ${live.end.reason})`,
          );
        }
        log(
          `event loop run ${r}: window ${(to - from).toFixed(0)} ms, longest gap ` +
            `${longestGapIn(live.times, from, to).toFixed(1)} ms, ${live.times.length} tokens`,
        );
        if (r > 0) {
          out.push(longestGapIn(live.times, from, to));
          window.push(to - from);
        }
      }
    }
    const metric = (what: string) => `longest gap between tokens of a running stream (ms), ${what}`;
    const rowOf = (what: string, values: number[]) =>
      row({
        section: 'event loop',
        metric: metric(what),
        ours: median(values),
        theirs: [],
        unit: 'ms',
        compare: 'none',
      });
    rowOf('nothing else running (500 ms window)', quiet);
    rowOf(`while a second model loads (bench-1b-q4_0, ${EVL_SLOTS} slots × 4096)`, loading);
    rowOf(`while another client sends a ${EVL_IMAGE_SIDE}×${EVL_IMAGE_SIDE} PNG to a vision model`, imaging);
    await answerWithTools(s, base);
    notes.push(
      `event loop: stream on tiny-qwen2-tools (OLLAMA_NUM_PARALLEL=${EVL_SLOTS}); the disturbing request took ` +
        `${fmt(median(windows[0]), 0)} ms (model load) and ${fmt(median(windows[1]), 0)} ms (image, ` +
        `${(png.length / MiB).toFixed(1)} MiB of base64) (medians)`,
    );
  } finally {
    await stopServer(daemon);
  }
  await hostileRows();
}

/** The event-loop section's hostile run (bench/event-loop-hostile.ts): the daemon's own event-loop delay. */
export async function hostileRows(): Promise<void> {
  const result = await hostileEventLoop(log);
  const phases: [string, LoopDelayFigures][] = [
    ['4 benign streams only', result.baseline],
    ['4 benign streams + the hostile suite', result.hostile],
  ];
  for (const [what, f] of phases) {
    for (const [q, value] of [
      ['p50', f.p50],
      ['p99', f.p99],
      ['max', f.max],
    ] as const) {
      row({
        section: 'event loop',
        metric: `daemon event-loop delay ${q} (ms), ${what}`,
        ours: value,
        theirs: [],
        unit: 'ms',
        compare: 'none',
      });
    }
  }
  row({
    section: 'event loop',
    metric: 'longest gap between chunks of a benign stream (ms), during the hostile suite',
    ours: result.longestGapMs,
    theirs: [],
    unit: 'ms',
    compare: 'none',
  });
  notes.push(
    `event loop, hostile suite: ${HOSTILE_CASES.length} requests in ${fmt(result.hostileMs / 1000, 1)} s; ` +
      `p50 is the median and p99/max the largest of ${result.hostile.scrapes} scrapes (each over the last 5-10 s); ` +
      (result.failedCases.length === 0
        ? 'every hostile request got a 4xx or completed'
        : `not a 4xx or a completed 2xx: ${result.failedCases.join('; ')}`),
  );
}

/**
 * The event-loop section's 4,000-token answer with tools (bench/parser-cost.ts): the output parsers' cost per token
 * in process (rendered and native mode, a synthetic answer ending in a long tool call), then a live /api/chat stream
 * with tools on the daemon (evl-stream), whose gaps between tokens late in the answer show any per-token cost that
 * grows with the answer.
 */
export async function answerWithTools(s: Settings, base: string): Promise<void> {
  const metric = (what: string) => `${ANSWER_TOKENS}-token answer with tools: ${what}`;
  const daemonRow = (what: string, value: number, unit: string, digits = 1) =>
    row({ section: 'event loop', metric: metric(what), ours: value, theirs: [], unit, digits, compare: 'none' });
  for (const { mode, figures } of await parserCost(join(FIXTURES, 'tiny-qwen2-tools.gguf'), s.runs)) {
    log(
      `parser cost, ${mode}: ${figures.firstUs.toFixed(1)} µs/token (first 500), ${figures.lastUs.toFixed(1)} ` +
        `µs/token (last 500), longest ${figures.longestMs.toFixed(2)} ms, total ${figures.totalMs.toFixed(0)} ms`,
    );
    daemonRow(`parser cost per token, first 500 tokens (µs), ${mode}`, figures.firstUs, 'µs');
    daemonRow(`parser cost per token, last 500 tokens (µs), ${mode}`, figures.lastUs, 'µs');
    daemonRow(`longest parser call (ms), ${mode}`, figures.longestMs, 'ms', 2);
  }
  const streams = [];
  for (let r = 0; r < Math.max(1, s.runs); r++) {
    streams.push(await chatStreamGaps(base, 'evl-stream', { ...sampling(r), num_ctx: 8192, num_thread: s.threads }));
    const g = streams[streams.length - 1];
    log(
      `chat stream with tools run ${r}: ${g.tokens} tokens, mean gap ${g.firstMs.toFixed(2)} ms (first 500) → ` +
        `${g.lastMs.toFixed(2)} ms (last 500), longest ${g.longestMs.toFixed(1)} ms`,
    );
  }
  daemonRow(
    'mean gap between tokens of a /api/chat stream, first 500 (ms)',
    median(streams.map((g) => g.firstMs)),
    'ms',
    2,
  );
  daemonRow(
    'mean gap between tokens of a /api/chat stream, last 500 (ms)',
    median(streams.map((g) => g.lastMs)),
    'ms',
    2,
  );
  daemonRow('longest gap between tokens of a /api/chat stream (ms)', median(streams.map((g) => g.longestMs)), 'ms');
  notes.push(
    `event loop: the ${ANSWER_TOKENS}-token answer with tools — parser rows feed a synthetic answer (thinking, text, ` +
      `one long write_file call) through the daemon's parsers in process; the stream rows are /api/chat on ` +
      `evl-stream (random weights: about ${fmt(median(streams.map((g) => g.tokens)), 0)} tokens streamed, median)`,
  );
}
