/**
 * Bench section `tracing` (issue 36): what OpenTelemetry traces cost. Two daemons on one store and one model, one
 * without OTEL_* variables (tracing off: no SDK is loaded, the generation hooks find no tracer provider) and one
 * exporting every request (OTEL_TRACES_SAMPLER=always_on, OTLP http/protobuf, the default encoding) to an in-process
 * receiver (a real HTTP server in the bench process that reads and drops the bodies), taking turns request by request
 * so that both see the same machine load. Rows: client-side decode tok/s of a streamed 128-token /api/generate,
 * request latency of a short non-streamed one (8 tokens) and, for the traced daemon, the OTLP bytes exported per
 * request; and, in the bench process, the CPU time the generation hooks spend on tracing per generation (off: no
 * provider; on: spans recorded and dropped). Model: bench-1b (Q4_0) when it was made, else tiny-qwen2 of the test fixtures (a smoke run: its tokens are
 * so cheap that any per-request cost shows at its largest).
 */
import { trace } from '@opentelemetry/api';
import { BatchSpanProcessor, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { REPO_ROOT } from '../src/config';
import { GenerationHooksRegistry } from '../src/observability';
import { decodeRate, ollamaGenerate, postJson, type StreamTiming } from './clients';
import { ensureModel } from './harness';
import { words } from './prompts';
import { notes, row } from './report';
import { startDaemon, stopServer, type RunningServer } from './servers';
import { DAEMON_LOG, log, MAIN_JS, MODEL_Q4, OUT_DIR, sampling, type Settings } from './settings';
import { fmt, median } from './stats';

const TINY = join(REPO_ROOT, 'test', 'fixtures', 'models', 'tiny-qwen2.gguf');
/** Short requests per server and round (latency). */
const SHORT_PER_ROUND = 5;

/** An OTLP/HTTP sink: counts the export requests and their bytes, answers 200. */
async function startSink(): Promise<{ base: string; posts: number; bytes: number; close(): Promise<void> }> {
  const sink = { base: '', posts: 0, bytes: 0, close: () => Promise.resolve() };
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (sink.bytes += chunk.length));
    req.on('end', () => {
      sink.posts++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sink.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  sink.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return sink;
}

const COUNTS = {
  totalDurationNs: 1,
  promptEvalCount: 100,
  promptCachedCount: 0,
  promptEvalDurationNs: 1,
  evalCount: 128,
  evalDurationNs: 1,
};

/**
 * CPU time of the generation hooks' tracing for one 128-token generation, in this process, µs: begin, the phase marks,
 * 128 tokens, finish — with no tracer provider (what a daemon without OTEL_* pays) and with a provider whose batch
 * processor hands the spans to an exporter that drops them (the recording, without the network). Median of 5 rounds of 2,000, yielding every 100.
 */
async function spanCostUs(traced: boolean): Promise<number> {
  const drop: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: () => Promise.resolve() };
  const provider = new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(drop)] });
  if (traced) provider.register();
  const registry = new GenerationHooksRegistry();
  const sampling = { maxTokens: 128, temperature: 0.8, topP: 0.9, topK: 40, seed: 1 };
  const rounds: number[] = [];
  try {
    for (let round = 0; round < 6; round++) {
      const started = performance.now();
      for (let i = 0; i < 2000; i++) {
        // Let the batch processor export (its queue holds 2,048 spans) as it would between requests.
        if (i % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
        const tracker = registry.begin('bench:latest', 'chat', process.hrtime.bigint());
        tracker.trace?.acquired(1000);
        tracker.trace?.promptReady();
        tracker.prompt(100);
        tracker.trace?.generating(100, sampling);
        for (let t = 0; t < 128; t++) tracker.token();
        tracker.finish(COUNTS, 'length');
      }
      if (round > 0) rounds.push(((performance.now() - started) / 2000) * 1000);
    }
  } finally {
    trace.disable();
    void provider.shutdown();
  }
  return median(rounds);
}

/** Runs the section and adds its rows. */
export async function tracingCost(s: Settings): Promise<void> {
  const add = (metric: string, value: number, unit: string, digits: number) =>
    row({ section: 'tracing', metric, ours: value, theirs: [], unit, digits, compare: 'none' });
  add('hooks µs per 128-token generation, no tracer provider (in-process)', await spanCostUs(false), 'µs', 1);
  add(
    'hooks µs per 128-token generation, traced (spans recorded, exporter dropping them)',
    await spanCostUs(true),
    'µs',
    1,
  );
  const file = existsSync(MODEL_Q4) ? MODEL_Q4 : TINY;
  const label = file === TINY ? 'tiny-qwen2' : 'bench-1b';
  const store = join(OUT_DIR, 'store-tracing');
  mkdirSync(store, { recursive: true });
  const sink = await startSink();
  const start = (env: Record<string, string>) =>
    startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: 1, threads: s.threads, log: DAEMON_LOG, env });
  let off: RunningServer | undefined;
  let on: RunningServer | undefined;
  try {
    off = await start({ OTEL_SDK_DISABLED: 'true' });
    await ensureModel(off.base, store, 'bench-tracing', file);
    on = await start({
      OTEL_EXPORTER_OTLP_ENDPOINT: sink.base,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_TRACES_SAMPLER: 'always_on',
      OTEL_BSP_SCHEDULE_DELAY: '200',
    });
    const servers = { off, on };
    const decode: Record<'off' | 'on', number[]> = { off: [], on: [] };
    const latency: Record<'off' | 'on', number[]> = { off: [], on: [] };
    let tracedRequests = 0;
    const bytesBefore = sink.bytes;
    for (let r = 0; r <= s.runs; r++) {
      // Alternate which server goes first; round 0 loads the model and warms caches (discarded).
      const order: Array<'off' | 'on'> = r % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
      for (const which of order) {
        const base = servers[which].base;
        const t: StreamTiming = await ollamaGenerate(base, {
          model: 'bench-tracing',
          prompt: words(100 + r, 96),
          raw: true,
          options: { ...sampling(r), num_ctx: 2048, num_predict: 128, num_thread: s.threads },
        });
        if (r > 0) decode[which].push(decodeRate(t));
        for (let i = 0; i < SHORT_PER_ROUND; i++) {
          const { ms } = await postJson(`${base}/api/generate`, {
            model: 'bench-tracing',
            prompt: words(900 + r * 10 + i, 16),
            raw: true,
            stream: false,
            options: { ...sampling(i), num_ctx: 2048, num_predict: 8, num_thread: s.threads },
          });
          if (r > 0) latency[which].push(ms);
        }
        if (which === 'on' && r > 0) tracedRequests += 1 + SHORT_PER_ROUND;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 600)); // the last batch of spans
    const offTps = median(decode.off);
    const onTps = median(decode.on);
    add(`decode tok/s, tracing off (${label}, 128 tokens)`, offTps, 'tok/s', 1);
    add(`decode tok/s, tracing on, 100 % sampled (${label})`, onTps, 'tok/s', 1);
    add('decode tok/s: on ÷ off', onTps / offTps, '×', 3);
    const offMs = median(latency.off);
    const onMs = median(latency.on);
    add(`request latency ms, tracing off (${label}, 8 tokens, not streamed)`, offMs, 'ms', 1);
    add('request latency ms, tracing on, 100 % sampled', onMs, 'ms', 1);
    add('request latency ms: on − off', onMs - offMs, 'ms', 2);
    add('OTLP bytes exported per traced request (http/protobuf)', (sink.bytes - bytesBefore) / tracedRequests, 'B', 0);
    notes.push(
      `tracing: ${s.runs} rounds, the two daemons taking turns (order alternating); decode medians of ${decode.on.length} ` +
        `streams each, latency medians of ${latency.on.length} requests each (off ${fmt(offMs, 1)} ms, on ` +
        `${fmt(onMs, 1)} ms); ${sink.posts} OTLP posts in all.`,
    );
  } finally {
    if (on) await stopServer(on);
    if (off) await stopServer(off);
    await sink.close();
  }
  log('tracing section done');
}
