/**
 * `npm run bench`: the daemon against llama.cpp's own llama-server built from the same vendored tree twice — with the
 * addon's ggml flags ("same flags") and the way a user builds llama.cpp by hand ("llama.cpp defaults"; both by
 * scripts/build-llama-server.mjs) — on the same generated ~1B model (Q4_0) and thread count, in one run, requests
 * interleaved. Prints one table of medians with our figure, each llama-server's and the ratios, and writes it to
 * .cache/bench/last-run.md (+ .json) for docs/benchmarks.md. It is not a test and never fails CI.
 *
 * Usage: npm run bench -- [--runs N] [--streams 1,4,8,16] [--threads T] [--sections a,b,...] [--peers same,defaults]
 *   [--weights q4_0|f16]
 *   [--quick]
 *   sections: single (decode, prompt eval, TTFT, overhead, cold start, RSS), multiturn, concurrency, embed; and,
 *   daemon only and not in the default set: event-loop (a stream's longest token gap while other requests work, and
 *   the output parsers' cost per token of a 4,000-token answer with tools, bench/parser-cost.ts) and
 *   rpc (decode locally vs over two loopback rpc-server workers) and runner (the process runner vs the in-process
 *   runner, bench/runner-modes.ts), prebuilt (the prebuilt package's addon vs the from-source build,
 *   bench/prebuilt-addon.ts) and parallel (4 clients against the daemon's default slots,
 *   OLLAMA_NUM_PARALLEL=1 and llama-server's `-np -1`, bench/parallel-default.ts), speculative (n-gram, self and
 *   2-layer drafts vs none, the agreeing pair, copy and edit tasks through `format`, and the draft cost at 0 %
 *   acceptance over many rounds, bench/speculative*.ts; `draft-cost` runs that last part alone) and kv-cache (q8_0 vs f16 KV, bench/kv-cache-type.ts) and prompt-cache (time
 *   to first token returning to an evicted 8k-token conversation with and without the host-RAM prompt cache,
 *   bench/prompt-cache.ts; LLAMAD_BENCH_PROMPT_CACHE_TOKENS sets another prompt size for a smoke run) and fairness
 *   (issue 33's fair queuing: tenant B's TTFT behind tenant A's 32 queued requests, A's throughput, bench/fairness.ts)
 *   and lora (issue 34: two adapters of one base vs one alone; 4 adapters over one base vs 4 separate loads, bench/lora.ts)
 *   and gaps (time between tokens at `--streams`: process runner, in-process runner and llama-server taking turns,
 *   bench/token-gaps.ts) and tracing (OpenTelemetry traces 100 % sampled vs off: decode tok/s, request latency,
 *   bench/tracing.ts) and audio (issue 38: prompt ms per second of a spoken clip through an audio projector over
 *   bench-1b, daemon /api/chat `audio` vs llama-server --mmproj `input_audio`, bench/audio.ts)
 * Backend: LLAMAD_BACKEND (cpu|cuda|...) as for the addon build; on a GPU build both servers offload every layer.
 * What is measured and why: docs/benchmarks.md.
 */
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { basename, join } from 'node:path';
import { REPO_ROOT } from '../src/config';
import { loadBinding } from '../src/native/load-binding';
import { postJson } from './clients';
import { eventLoop } from './event-loop';
import { fairness } from './fairness';
import {
  buildPeers,
  ensureModel,
  memoryBandwidth,
  startBenchDaemon,
  startPeers,
  unloadAll,
  warmPageCache,
} from './harness';
import { BENCH_AUDIO_MMPROJ } from '../scripts/test-model-audio';
import { BENCH_1B_LORAS } from '../scripts/test-model-extras';
import { AUDIO_SLOT_CTX, audioSection } from './audio';
import { AGREEING_PAIRS } from '../scripts/test-model-specs';
import { kvCacheType } from './kv-cache-type';
import { loraSection } from './lora';
import { parallelDefault } from './parallel-default';
import { prebuiltAddon } from './prebuilt-addon';
import { promptCache } from './prompt-cache';
import { words } from './prompts';
import { addonFlags, markdownTable, notes, row, rows } from './report';
import { runnerModes } from './runner-modes';
import { concurrency, embeddings, rpcDecode, singleStream } from './sections';
import { llamaServerArgs, startDaemon, stopServer } from './servers';
import {
  benchModelFile,
  blobs,
  DAEMON_LOG,
  llamaOptions,
  log,
  MAIN_JS,
  MiB,
  MODEL_AGREE,
  MODEL_AGREE_DRAFT,
  MODEL_BERT,
  MODEL_DRAFT_Q4,
  MODEL_Q4,
  ollamaOptions,
  OUT_DIR,
  serverOptions,
  settings,
  sh,
  SLOT_CTX,
  STREAM_SLOT_CTX,
} from './settings';
import { speculative } from './speculative';
import { tokenGaps } from './token-gaps';
import { tracingCost } from './tracing';
import { fmt } from './stats';

async function main(): Promise<void> {
  const s = settings();
  mkdirSync(OUT_DIR, { recursive: true });
  rmSync(DAEMON_LOG, { force: true });
  if (!existsSync(MAIN_JS)) throw new Error('dist/ is missing: run `npm install` first');

  if (
    ![
      'single',
      'multiturn',
      'concurrency',
      'embed',
      'rpc',
      'runner',
      'prebuilt',
      'parallel',
      'speculative',
      'draft-cost',
      'kv-cache',
      'prompt-cache',
      'fairness',
      'lora',
      'gaps',
      'audio',
    ].some((x) => s.sections.has(x))
  ) {
    // Sections that run the daemon alone (event-loop): no llama-server, no bench models, no bandwidth figure.
    if (s.sections.has('event-loop')) {
      log('event loop: token gaps of a stream while other requests work');
      await eventLoop(s);
    }
    if (s.sections.has('tracing')) {
      log('tracing: OpenTelemetry traces on (100 % sampled) vs off');
      await tracingCost(s);
    }
    const cpu = cpus()[0]?.model ?? 'unknown CPU';
    const header = [
      `Run ${new Date().toISOString()} · backend ${s.backend} · ${cpu} · ${availableParallelism()} logical CPUs · ` +
        `threads 1 (event-loop) · runs ${s.runs} (medians)`,
      `Daemon build: ${addonFlags()}`,
    ];
    const md = [...header.map((h) => `- ${h}`), '', markdownTable([]), '', ...notes.map((n) => `- ${n}`)].join('\n');
    writeFileSync(join(OUT_DIR, 'last-run.md'), `${md}\n`);
    writeFileSync(join(OUT_DIR, 'last-run.json'), `${JSON.stringify({ header, rows, notes }, null, 2)}\n`);
    console.log(md);
    return;
  }
  // rpc is daemon-only too: no llama-server is built when it (with event-loop) is all that was asked for.
  const peers = [...s.sections].every((x) =>
    [
      'rpc',
      'event-loop',
      'runner',
      'prebuilt',
      'kv-cache',
      'prompt-cache',
      'fairness',
      'tracing',
      'draft-cost',
    ].includes(x),
  )
    ? []
    : buildPeers(s);
  for (const p of peers) rmSync(p.log, { force: true });
  log('making the benchmark models (once)');
  sh(process.execPath, [
    join(REPO_ROOT, 'dist', 'scripts', 'make-test-models.js'),
    '--only',
    [
      'bench-1b-f16.gguf,bench-1b-q4_0.gguf,bench-bert-f16.gguf,bench-1b-draft-f16.gguf,bench-1b-draft-q4_0.gguf',
      ...(s.sections.has('lora') ? BENCH_1B_LORAS.map((l) => l.file) : []),
      ...(s.sections.has('speculative') ? AGREEING_PAIRS.bench.map((m) => m.file) : []),
      ...(s.sections.has('audio') ? [BENCH_AUDIO_MMPROJ.file] : []),
    ].join(','),
  ]);
  log('measuring memory bandwidth');
  const bandwidth = memoryBandwidth(s.threads);
  const readBw = bandwidth.find((b) => b.threads === s.threads)?.read_GBps ?? NaN;

  const store = join(OUT_DIR, 'store');
  {
    const d = await startBenchDaemon(s, store, 1);
    try {
      blobs.q4 = await ensureModel(d.base, store, 'bench-1b', benchModelFile(s));
      blobs.bert = await ensureModel(d.base, store, 'bench-bert', MODEL_BERT);
      await unloadAll(d.base);
    } finally {
      await stopServer(d);
    }
  }
  if (s.sections.has('single')) {
    log('single stream, multi-turn, cold start, memory');
    await singleStream(s, peers, store);
  }
  if (s.sections.has('concurrency')) {
    log(`concurrency at ${s.streams.join(', ')} streams`);
    await concurrency(s, peers, store);
  }
  if (s.sections.has('parallel')) {
    log('4 clients: default slots vs OLLAMA_NUM_PARALLEL=1 vs llama-server -np -1');
    await parallelDefault({
      runs: s.runs,
      peerCount: peers.length,
      startDaemon: (n) =>
        startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: n, threads: s.threads, log: DAEMON_LOG }),
      startPeers: (slots, total) =>
        startPeers(peers, { ...serverOptions(s, blobs.q4, 1, total, ''), slots, ctx: total }),
      ollamaOptions: (seed, numCtx, predict) => ollamaOptions(s, seed, numCtx, predict),
      llamaOptions: (seed, predict) => llamaOptions(seed, predict),
      row: (metric, ours, theirs, unit, compare) =>
        row({ section: 'parallel', metric, ours, theirs, unit, compare, digits: unit === '×' ? 2 : 1 }),
    });
  }
  /** A row writer for sections that measure the daemon alone (no peer column). */
  const oursOnly =
    (section: string) =>
    (metric: string, value: number, unit: string, target = '', digits = 1): void =>
      row({ section, metric, ours: value, theirs: peers.map(() => NaN), unit, digits, compare: 'none', target });
  if (s.sections.has('fairness')) {
    log(`fair queuing: tenant B's TTFT behind tenant A's 32 queued requests, A's throughput with and without B`);
    await fairness({
      runs: s.runs,
      startDaemon: (env) =>
        startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: 0, threads: s.threads, log: DAEMON_LOG, env }),
      ollamaOptions: (seed, numCtx, predict) => ollamaOptions(s, seed, numCtx, predict),
      row: oursOnly('fairness'),
    });
  }
  if (s.sections.has('prompt-cache')) {
    log('returning to an evicted conversation: host-RAM prompt cache vs LLAMAD_CACHE_RAM=0');
    await promptCache({
      runs: s.runs,
      tokens: Number(process.env.LLAMAD_BENCH_PROMPT_CACHE_TOKENS ?? 8192),
      startDaemon: (env) =>
        startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: 1, threads: s.threads, log: DAEMON_LOG, env }),
      ollamaOptions: (seed, numCtx, predict) => ollamaOptions(s, seed, numCtx, predict),
      row: oursOnly('prompt-cache'),
    });
  }
  if (s.sections.has('embed')) {
    log('embeddings');
    await embeddings(s, peers, store);
  }
  if (s.sections.has('rpc')) {
    log('decode over two loopback RPC workers vs local');
    await rpcDecode(s, store);
  }
  if (s.sections.has('event-loop')) {
    log('event loop: token gaps of a stream while other requests work');
    await eventLoop(s);
  }
  if (s.sections.has('tracing')) {
    log('tracing: OpenTelemetry traces on (100 % sampled) vs off');
    await tracingCost(s);
  }
  if (s.sections.has('gaps')) {
    log(`time between tokens at ${s.streams.join(', ')} streams: process runner, in-process runner, llama-server`);
    await tokenGaps({
      runs: s.runs,
      streams: s.streams,
      peerCount: peers.length,
      startDaemon: (n, env) =>
        startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: n, threads: s.threads, log: DAEMON_LOG, env }),
      startPeers: (slots, slotCtx) => startPeers(peers, serverOptions(s, blobs.q4, slots, slotCtx, '')),
      ollamaOptions: (seed, numCtx, predict) => ollamaOptions(s, seed, numCtx, predict),
      llamaOptions: (seed, predict) => llamaOptions(seed, predict),
      row: (metric, ours, theirs, unit, digits, compare) =>
        row({ section: 'gaps', metric, ours, theirs, unit, digits, compare }),
    });
  }
  if (s.sections.has('runner')) {
    log('process runner vs in-process runner');
    await runnerModes({
      runs: s.runs,
      startDaemon: (n, env) =>
        startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: n, threads: s.threads, log: DAEMON_LOG, env }),
      options: (seed, numCtx, predict) => ollamaOptions(s, seed, numCtx, predict),
      prompt: (seed, tokens) => Promise.resolve(words(seed, Math.round(tokens * 0.75))),
      row: (metric, value, unit, digits = 1) =>
        row({ section: 'runner', metric, ours: value, theirs: peers.map(() => NaN), unit, digits, compare: 'none' }),
      warm: () => warmPageCache(blobs.q4),
    });
  }
  if (s.sections.has('prebuilt')) {
    log('prebuilt package addon vs from-source addon');
    const backend = (process.env.LLAMAD_BACKEND ?? 'cpu').toLowerCase();
    await prebuiltAddon({
      runs: s.runs,
      sourceAddon: join(REPO_ROOT, 'build', backend, 'Release', 'llamad.node'),
      prebuiltAddon: join(REPO_ROOT, 'build', `prebuilt-${backend}`, 'bin', 'llamad.node'),
      startDaemon: (env) =>
        startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: 1, threads: s.threads, log: DAEMON_LOG, env }),
      options: (seed, numCtx, predict) => ollamaOptions(s, seed, numCtx, predict),
      prompt: (seed, tokens) => Promise.resolve(words(seed, Math.round(tokens * 0.75))),
      row: (metric, value, unit, digits = 1) =>
        row({ section: 'prebuilt', metric, ours: value, theirs: peers.map(() => NaN), unit, digits, compare: 'none' }),
    });
  }

  if (s.sections.has('speculative') || s.sections.has('draft-cost')) {
    log(
      s.sections.has('speculative')
        ? 'speculative decoding: n-gram, self draft, 2-layer draft vs none; the agreeing pair; copy and edit via format'
        : 'draft cost: self draft and 2-layer draft at 0 % acceptance vs none, daemon alone',
    );
    const only = s.sections.has('speculative') ? undefined : 'draft-cost';
    await speculative(
      {
        runs: s.runs,
        threads: s.threads,
        targetFile: MODEL_Q4,
        draftFile: MODEL_DRAFT_Q4,
        agreeTargetFile: MODEL_AGREE,
        agreeDraftFile: MODEL_AGREE_DRAFT,
        startDaemon: () =>
          startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: 1, threads: s.threads, log: DAEMON_LOG }),
        startPeers: (extra, model = blobs.q4) => startPeers(peers, { ...serverOptions(s, model, 1, 2048, ''), extra }),
        peerCount: peers.length,
        post: async (url, body) => (await postJson(url, body)).json,
        binding: () => loadBinding(),
        row: (metric, ours, theirs, unit, digits, compare) =>
          row({ section: 'speculative', metric, ours, theirs, unit, digits, compare }),
      },
      only,
    );
  }
  if (s.sections.has('lora')) {
    log(
      `LoRA: two adapters of one base vs one alone; ${BENCH_1B_LORAS.length} adapters over one base vs separate loads`,
    );
    await loraSection({
      runs: s.runs,
      adapters: BENCH_1B_LORAS.map((l) => join(REPO_ROOT, '.cache', 'models', l.file)),
      startDaemon: (slots, env) =>
        startDaemon({
          mainJs: MAIN_JS,
          modelsDir: store,
          numParallel: slots,
          threads: s.threads,
          log: DAEMON_LOG,
          env,
        }),
      startPeers: (slots, extra) =>
        startPeers(peers, { ...serverOptions(s, blobs.q4, slots, STREAM_SLOT_CTX, ''), extra }),
      peerCount: peers.length,
      ollamaOptions: (seed, numCtx, predict) => ollamaOptions(s, seed, numCtx, predict),
      llamaOptions: (seed, predict) => llamaOptions(seed, predict),
      prompt: (seed, n) => words(seed, n),
      row: (metric, ours, theirs, unit, digits, compare) =>
        row({ section: 'lora', metric, ours, theirs, unit, digits, compare }),
    });
  }
  if (s.sections.has('audio')) {
    log('audio: prompt time per second of a spoken clip (bench-1b + bench-audio-mmproj)');
    await audioSection({
      runs: s.runs,
      peers,
      projector: join(REPO_ROOT, '.cache', 'models', BENCH_AUDIO_MMPROJ.file),
      baseModel: 'bench-1b',
      startDaemon: () =>
        startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: 1, threads: s.threads, log: DAEMON_LOG }),
      startPeers: (extra) => startPeers(peers, { ...serverOptions(s, blobs.q4, 1, AUDIO_SLOT_CTX, ''), extra }),
      ollamaOptions: (seed, numCtx, predict) => ollamaOptions(s, seed, numCtx, predict),
      row: (metric, ours, theirs, unit, digits, compare) =>
        row({ section: 'audio', metric, ours, theirs, unit, digits, compare }),
      note: (text) => notes.push(text),
    });
  }
  if (s.sections.has('kv-cache')) {
    log('KV cache q8_0 vs f16 (flash attention on)');
    await kvCacheType({
      runs: s.runs,
      startDaemon: (env) =>
        startDaemon({ mainJs: MAIN_JS, modelsDir: store, numParallel: 1, threads: s.threads, log: DAEMON_LOG, env }),
      options: (seed, numCtx, predict) => ollamaOptions(s, seed, numCtx, predict),
      prompt: (seed, tokens) => Promise.resolve(words(seed, Math.round(tokens * 0.75))),
      row: (metric, value, unit, digits = 1) =>
        row({ section: 'kv-cache', metric, ours: value, theirs: peers.map(() => NaN), unit, digits, compare: 'none' }),
    });
  }

  // Every weight is read once per decoded token: bytes per token ≈ the Q4_0 file size. On a GPU the weights live in
  // device memory, so the host's RAM bandwidth says nothing: the bound then needs the device's bandwidth in GB/s
  // (its data sheet figure, e.g. 3350 for an H100 SXM) in LLAMAD_BENCH_GPU_BW_GBPS, else it is not reported.
  const weights = statSync(benchModelFile(s)).size;
  const gpuBw = Number(process.env.LLAMAD_BENCH_GPU_BW_GBPS ?? NaN);
  const boundBw = s.gpu ? gpuBw : readBw;
  const bound = (boundBw * 1e9) / weights;
  const boundSource = s.gpu ? `device bandwidth ${fmt(gpuBw)} GB/s (LLAMAD_BENCH_GPU_BW_GBPS)` : 'host read bandwidth';
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const header = [
    `Run ${new Date().toISOString()} · backend ${s.backend} · ${cpu} · ${availableParallelism()} logical CPUs · ` +
      `${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM · threads ${s.threads} · runs ${s.runs} (medians)`,
    `Daemon build: ${addonFlags()}`,
    ...peers.map((p) => `${p.label}: ${p.bin.replace(REPO_ROOT + '/', '')}`),
    `Memory read bandwidth (bench/membw.c): ${bandwidth.map((b) => `${b.read_GBps} GB/s at ${b.threads} thread${b.threads > 1 ? 's' : ''}`).join(', ')}`,
    Number.isFinite(bound)
      ? `Model: ${basename(benchModelFile(s))}, ${(weights / MiB).toFixed(1)} MiB → single-stream decode bound ${fmt(bound)} tok/s ` +
        `(${boundSource} ÷ weight bytes per token)`
      : `Model: ${basename(benchModelFile(s))}, ${(weights / MiB).toFixed(1)} MiB; no decode bound (set LLAMAD_BENCH_GPU_BW_GBPS)`,
    ...(peers.length === 0
      ? []
      : [
          `llama-server: ${llamaServerArgs({ ...serverOptions(s, basename(benchModelFile(s)), 1, SLOT_CTX, ''), bin: '' }).join(' ')} (-np/-c per section)`,
        ]),
  ];
  const decode = rows.find((r) => r.metric.startsWith('decode tok/s (128'));
  if (decode && peers.length > 0 && Number.isFinite(bound)) {
    header.push(
      `Decode as a share of the bound: daemon ${fmt((decode.ours / bound) * 100)} %, ` +
        peers.map((p, i) => `${p.label} ${fmt((decode.theirs[i] / bound) * 100)} %`).join(', '),
    );
  }
  const md = [...header.map((h) => `- ${h}`), '', markdownTable(peers), '', ...notes.map((n) => `- ${n}`)].join('\n');
  writeFileSync(join(OUT_DIR, 'last-run.md'), `${md}\n`);
  writeFileSync(
    join(OUT_DIR, 'last-run.json'),
    `${JSON.stringify({ header, peers, bandwidth, rows, notes }, null, 2)}\n`,
  );
  console.log(md);
  log(`written to ${join(OUT_DIR, 'last-run.md')}`);
}

main().catch((err: unknown) => {
  // Not a test: a failure is reported but the exit status stays 0 only when asked (CI never runs the bench).
  console.error(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
