/**
 * Bench section `lora` (issue 34): LoRA adapters served per request over one base (bench-1b Q4_0 and rank-16 adapters
 * made by scripts/make-test-models, `bench-1b-lora-<i>.gguf`), daemon and each llama-server peer side by side.
 *
 * - Decode: one adapter alone (1 stream); two streams of the same adapter (one batch); two streams of two adapters of
 *   the same base (the engine decodes one adapter set per step, in turn). Aggregate tok/s as in the concurrency
 *   section: tokens of all streams ÷ time from the requests to the last token. The daemon's adapters are models
 *   `FROM bench-1b` + `ADAPTER <file>`; llama-server loads the files with `--lora` and each request names its adapter
 *   with `lora: [{id, scale: 1}]` (unlisted adapters get scale 0).
 * - Memory: N adapters resident over one base — the daemon after one request per adapter model (one runner,
 *   LLAMAD_MAX_LORAS = N), against N separate loads of base + one adapter (N llama-server processes, the same engine:
 *   what N runners cost); and against one llama-server holding all N. RSS summed over the processes: each process maps
 *   the weights (on a GPU each separate load holds its own copy); the anonymous part is KV, compute buffers and adapters.
 */
import { performance } from 'node:perf_hooks';
import { llamaCompletion, ollamaGenerate, postJson, type StreamTiming } from './clients';
import { readTreeRss, stopServer, type RunningServer } from './servers';
import { median } from './stats';

/** What the section needs from bench.ts. */
export interface LoraBenchContext {
  runs: number;
  /** Adapter files for the base (at least 2). */
  adapters: string[];
  /** Starts the daemon with `slots` slots and these extra environment variables. */
  startDaemon(slots: number, env: Record<string, string>): Promise<RunningServer>;
  /** Starts one llama-server per peer on the base with `slots` slots and these extra arguments. */
  startPeers(slots: number, extra: string[]): Promise<RunningServer[]>;
  peerCount: number;
  /** The Ollama `options` of a request (seed, num_ctx, num_predict and the run's threads/batch). */
  ollamaOptions(seed: number, numCtx: number, predict: number): Record<string, unknown>;
  /** llama-server's body fields of the same request. */
  llamaOptions(seed: number, predict: number): Record<string, unknown>;
  /** A prompt of about `tokens` tokens. */
  prompt(seed: number, tokens: number): string;
  /** Adds a row: the daemon's figure and one per peer (NaN where not measured). */
  row(metric: string, ours: number, theirs: number[], unit: string, digits: number, compare: 'ratio' | 'none'): void;
}

const PREDICT = 128;
const SLOT_CTX = 1024;
const MiB = 1024 * 1024;

/** One client's request on one side: the daemon's model name or llama-server's adapter id. */
type Stream = { adapter: number };

export async function loraSection(c: LoraBenchContext): Promise<void> {
  const n = c.adapters.length;
  const daemon = await c.startDaemon(2, { LLAMAD_MAX_LORAS: String(n) });
  const peers = await c.startPeers(
    2,
    c.adapters.flatMap((file) => ['--lora', file]),
  );
  try {
    for (let i = 0; i < n; i++) await createAdapterModel(daemon.base, `bench-ft${i}`, c.adapters[i]);
    const cases: { metric: string; streams: Stream[] }[] = [
      { metric: 'one adapter alone, 1 stream: tok/s', streams: [{ adapter: 0 }] },
      { metric: 'one adapter, 2 streams: aggregate tok/s', streams: [{ adapter: 0 }, { adapter: 0 }] },
      { metric: 'two adapters of one base, 2 streams: aggregate tok/s', streams: [{ adapter: 0 }, { adapter: 1 }] },
    ];
    const figures = cases.map(() => ({ ours: [] as number[], theirs: peers.map(() => [] as number[]) }));
    for (let r = 0; r <= c.runs; r++) {
      for (const [k, { streams }] of cases.entries()) {
        const predict = r === 0 ? 8 : PREDICT; // run 0 only warms up (and loads every adapter once)
        const ours = await aggregate(streams, (s, i) =>
          ollamaGenerate(daemon.base, {
            model: `bench-ft${s.adapter}`,
            prompt: c.prompt(500 + r * 10 + i, 24),
            raw: true,
            ...c.ollamaOptions(i, SLOT_CTX, predict),
          }),
        );
        const theirs = [];
        for (const peer of peers) {
          theirs.push(
            await aggregate(streams, (s, i) =>
              llamaCompletion(peer.base, {
                prompt: c.prompt(500 + r * 10 + i, 24),
                lora: [{ id: s.adapter, scale: 1 }],
                ...c.llamaOptions(i, predict),
              }),
            ),
          );
        }
        if (r === 0) continue;
        figures[k].ours.push(ours);
        theirs.forEach((x, p) => figures[k].theirs[p].push(x));
      }
    }
    for (const [k, { metric }] of cases.entries()) {
      c.row(metric, median(figures[k].ours), figures[k].theirs.map(median), 'tok/s', 1, 'ratio');
    }
    c.row(
      '  two adapters ÷ one adapter, 2 streams (aggregate)',
      median(figures[2].ours) / median(figures[1].ours),
      figures[2].theirs.map((t, p) => median(t) / median(figures[1].theirs[p])),
      '×',
      2,
      'none',
    );

    // Memory: every adapter resident after one request each (run 0 above), one runner.
    for (let i = 0; i < n; i++) {
      await ollamaGenerate(daemon.base, {
        model: `bench-ft${i}`,
        prompt: 'Hello',
        raw: true,
        ...c.ollamaOptions(i, SLOT_CTX, 2),
      });
    }
    const ps = (await (await fetch(`${daemon.base}/api/ps`)).json()) as { models: unknown[] };
    if (ps.models.length !== 1) {
      throw new Error(`expected one runner for ${n} adapters, /api/ps has ${ps.models.length}`);
    }
    const ours = readTreeRss(daemon.child.pid!);
    const together = peers.map((p) => readTreeRss(p.child.pid!));
    for (const p of peers) await stopServer(p);
    peers.length = 0;
    // N separate loads: base + one adapter per process, the same slots; each measured after one request.
    const separate = Array.from({ length: c.peerCount }, () => ({ total: 0, anon: 0 }));
    for (const file of c.adapters) {
      const singles = await c.startPeers(2, ['--lora', file]);
      try {
        for (const [p, single] of singles.entries()) {
          await llamaCompletion(single.base, { prompt: 'Hello', ...c.llamaOptions(0, 2) });
          const rss = readTreeRss(single.child.pid!);
          separate[p].total += rss.total;
          separate[p].anon += rss.anon;
        }
      } finally {
        for (const single of singles) await stopServer(single);
      }
    }
    const mib = (x: number) => x / MiB;
    c.row(
      `memory, ${n} adapters over one base, RSS (MiB); llama-server: ${n} separate loads, summed`,
      mib(ours.total),
      separate.map((x) => mib(x.total)),
      'MiB',
      0,
      'ratio',
    );
    c.row(
      '  anonymous part (KV, compute buffers, adapters; MiB)',
      mib(ours.anon),
      separate.map((x) => mib(x.anon)),
      'MiB',
      0,
      'ratio',
    );
    c.row(
      `memory, ${n} adapters over one base, RSS (MiB); llama-server: one process with ${n} --lora`,
      mib(ours.total),
      together.map((t) => mib(t.total)),
      'MiB',
      0,
      'ratio',
    );
  } finally {
    await stopServer(daemon);
    for (const p of peers) await stopServer(p);
  }
}

/** Runs the streams together; tokens of all ÷ time from the start to the last token, tokens/s. */
async function aggregate(
  streams: Stream[],
  run: (stream: Stream, index: number) => Promise<StreamTiming>,
): Promise<number> {
  const started = performance.now();
  const all = await Promise.all(streams.map(run));
  const last = Math.max(...all.map((t) => t.tokenTimes[t.tokenTimes.length - 1]));
  const tokens = all.reduce((sum, t) => sum + t.evalCount, 0);
  return (tokens / (last - started)) * 1000;
}

/** Creates model `name` = bench-1b + the adapter file (a server path: the bench's client is local). */
async function createAdapterModel(base: string, name: string, file: string): Promise<void> {
  const { json } = await postJson(`${base}/api/create`, {
    model: name,
    modelfile: `FROM bench-1b\nADAPTER ${file}\n`,
    stream: false,
  });
  if ((json as { status?: string }).status !== 'success') throw new Error(`create ${name}: ${JSON.stringify(json)}`);
}
