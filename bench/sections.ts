/**
 * The benchmark's sections against llama-server: single stream (with cold start, memory and multi-turn), concurrency,
 * embeddings; and the daemon-only rpc section (decode locally vs over loopback rpc-server workers).
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { findRpcServerPath } from '../src/native/load-binding';
import {
  decodeRate,
  llamaChat,
  llamaCompletion,
  ollamaChat,
  ollamaGenerate,
  postJson,
  ttft,
  type StreamTiming,
} from './clients';
import { startBenchDaemon, startPeers, stopAll, warmPageCache, type Servers } from './harness';
import { textOfTokens, words } from './prompts';
import { notes, row, type Row } from './report';
import { llamaServerArgs, readRss, readTreeRss, startLlamaServer, startRpcWorker, stopServer } from './servers';
import {
  blobs,
  DECODE_TOKENS,
  EMBED_INPUTS,
  HISTORY_TOKENS,
  llamaOptions,
  MiB,
  ollamaOptions,
  OUT_DIR,
  PerSide,
  PROMPT_TOKENS,
  sampling,
  serverOptions,
  sidesOf,
  SLOT_CTX,
  STREAM_SLOT_CTX,
  type Peer,
  type Settings,
  type Side,
} from './settings';
import { gaps, median, percentile } from './stats';

// ---------------------------------------------------------------------------------------------------------------
// Sections

/** Single stream: prompt eval (512), decode (128), TTFT, overhead; cold start and RSS from the same processes. */
export async function singleStream(s: Settings, peers: readonly Peer[], store: string): Promise<void> {
  // Cold start, one process at a time, on the same file with its pages in the page cache (load work, not disk).
  // The daemon is already running and loads on the first request (Ollama's model); llama-server loads at start-up,
  // so its figure runs from spawn. The daemon's own process start is reported apart.
  warmPageCache(blobs.q4);
  const daemon = await startBenchDaemon(s, store, 1);
  const daemonUp = performance.now() - daemon.spawnedAt;
  warmPageCache(blobs.q4);
  const daemonFirst = await ollamaGenerate(daemon.base, {
    model: 'bench-1b',
    prompt: 'Hello',
    raw: true,
    ...ollamaOptions(s, 1, SLOT_CTX, 1),
  });
  const servers: Servers = { daemon, llamas: [] };
  const llamaFirst: number[] = [];
  try {
    for (const p of peers) {
      warmPageCache(blobs.q4);
      const llama = await startLlamaServer({ ...serverOptions(s, blobs.q4, 1, SLOT_CTX, p.log), bin: p.bin });
      servers.llamas.push(llama);
      const first = await llamaCompletion(llama.base, { prompt: 'Hello', ...llamaOptions(1, 1) });
      llamaFirst.push(first.tokenTimes[0] - llama.spawnedAt);
    }
    row({
      section: 'cold start',
      metric: 'model not loaded → first token (ms): daemon request / llama-server spawn',
      ours: ttft(daemonFirst),
      theirs: llamaFirst,
      unit: 'ms',
      digits: 0,
    });
    row({
      section: 'cold start',
      metric: 'daemon process spawn → listening (ms)',
      ours: daemonUp,
      theirs: peers.map(() => NaN),
      unit: 'ms',
      digits: 0,
      compare: 'none',
    });

    const prompts: string[] = [];
    for (let r = 0; r <= s.runs; r++) {
      prompts.push(await textOfTokens(servers.llamas[0].base, 100 + r, PROMPT_TOKENS - 1));
    }
    const timings = new PerSide<StreamTiming>(peers.length);
    for (let r = 0; r <= s.runs; r++) {
      // run 0 warms every server up and is not counted
      for (const side of sidesOf(r, peers)) {
        const t =
          side === 'ours'
            ? await ollamaGenerate(daemon.base, {
                model: 'bench-1b',
                prompt: prompts[r],
                raw: true,
                ...ollamaOptions(s, r, SLOT_CTX, DECODE_TOKENS),
              })
            : await llamaCompletion(servers.llamas[side].base, {
                prompt: prompts[r],
                ...llamaOptions(r, DECODE_TOKENS),
              });
        if (r > 0) timings.push(side, t);
      }
    }
    const m = (xs: StreamTiming[], f: (t: StreamTiming) => number) => median(xs.map(f));
    const perPeer = (f: (t: StreamTiming) => number) => timings.peers.map((xs) => m(xs, f));
    notes.push(
      `single stream: prompt tokens evaluated ${m(timings.ours, (t) => t.promptCount)} (daemon) vs ` +
        `${perPeer((t) => t.promptCount).join(' / ')} (llama-server); tokens generated ` +
        `${m(timings.ours, (t) => t.evalCount)} vs ${perPeer((t) => t.evalCount).join(' / ')}`,
    );
    const list = (xs: StreamTiming[]) => xs.map((t) => ttft(t).toFixed(0)).join(', ');
    notes.push(
      `single stream: TTFT per run (ms), daemon ${list(timings.ours)}; ` +
        peers.map((p, i) => `${p.label} ${list(timings.peers[i])}`).join('; '),
    );
    const lastToken = (t: StreamTiming): number => t.tokenTimes[t.tokenTimes.length - 1];
    const single: [string, (t: StreamTiming) => number, Partial<Row>][] = [
      [
        `prompt eval tok/s (${PROMPT_TOKENS}-token prompt, server-reported)`,
        (t) => (t.promptCount / t.promptMs) * 1000,
        { unit: 'tok/s', target: '≥ 0.97×' },
      ],
      [`decode tok/s (${DECODE_TOKENS} tokens, client-side)`, decodeRate, { unit: 'tok/s', target: '≥ 0.97×' }],
      ['decode tok/s (server-reported)', (t) => (t.evalCount / t.evalMs) * 1000, { unit: 'tok/s' }],
      [
        `time to first token, ${PROMPT_TOKENS}-token prompt (ms)`,
        ttft,
        { unit: 'ms', compare: 'delta', target: '≤ +5 ms' },
      ],
      [
        'request in → first token, minus prompt eval (ms)',
        (t) => ttft(t) - t.promptMs,
        { unit: 'ms', compare: 'delta' },
      ],
      ['last token → response end (ms)', (t) => t.endAt - lastToken(t), { unit: 'ms', digits: 2, compare: 'delta' }],
    ];
    for (const [metric, f, extra] of single) {
      row({ section: 'single stream', metric, ours: m(timings.ours, f), theirs: perPeer(f), unit: '', ...extra });
    }

    const rssOurs = readTreeRss(daemon.child.pid ?? 0); // the daemon and its runner processes
    const rssTheirs = servers.llamas.map((l) => readRss(l.child.pid ?? 0));
    const memory: [keyof typeof rssOurs, string, string][] = [
      ['total', 'resident memory after the runs (MiB)', '≤ +150 MiB'],
      ['anon', '  of which anonymous (MiB)', ''],
      ['file', '  of which file-backed, mmap (MiB)', ''],
    ];
    for (const [key, metric, target] of memory) {
      row({
        section: 'memory',
        metric,
        ours: rssOurs[key] / MiB,
        theirs: rssTheirs.map((r) => r[key] / MiB),
        unit: 'MiB',
        digits: 0,
        compare: 'delta',
        target,
      });
    }

    if (s.sections.has('multiturn')) await multiTurn(s, servers, peers);
  } finally {
    await stopAll(servers);
  }
}

/** Chat with a 1,500-token shared history: TTFT of the second turn against the first (prefix reuse). */
export async function multiTurn(s: Settings, servers: Servers, peers: readonly Peer[]): Promise<void> {
  const first = new PerSide<number>(peers.length);
  const second = new PerSide<number>(peers.length);
  const evaluated = new PerSide<number>(peers.length);
  for (let r = 0; r < Math.max(2, Math.ceil(s.runs / 2)); r++) {
    const history = await textOfTokens(servers.llamas[0].base, 500 + r, HISTORY_TOKENS);
    const messages = [
      { role: 'system', content: `You are a helpful assistant. Background: ${history}` },
      { role: 'user', content: `Question ${r}: ${words(900 + r, 12)}?` },
    ];
    const question = { role: 'user', content: `And then: ${words(950 + r, 10)}?` };
    for (const side of sidesOf(r, peers)) {
      const call = (msgs: unknown[]): Promise<StreamTiming> =>
        side === 'ours'
          ? ollamaChat(servers.daemon.base, {
              model: 'bench-1b',
              messages: msgs,
              ...ollamaOptions(s, r, SLOT_CTX, 32),
            })
          : llamaChat(servers.llamas[side].base, {
              messages: msgs,
              ...sampling(r),
              max_tokens: 32,
              cache_prompt: true,
            });
      const t1 = await call(messages);
      const reply = await replyText(side, servers, messages, r, s);
      const t2 = await call([...messages, { role: 'assistant', content: reply }, question]);
      first.push(side, ttft(t1));
      second.push(side, ttft(t2));
      evaluated.push(side, t2.promptCount);
    }
  }
  notes.push(
    `multi-turn: prompt tokens evaluated in turn 2 (after prefix reuse), daemon ${evaluated.ours.join(', ')}; ` +
      peers.map((p, i) => `${p.label} ${evaluated.peers[i].join(', ')}`).join('; '),
  );
  row({
    section: 'multi-turn',
    metric: `first turn TTFT, ${HISTORY_TOKENS}-token history (ms)`,
    ours: median(first.ours),
    theirs: first.peers.map(median),
    unit: 'ms',
    digits: 0,
  });
  row({
    section: 'multi-turn',
    metric: 'second turn TTFT (ms)',
    ours: median(second.ours),
    theirs: second.peers.map(median),
    unit: 'ms',
    digits: 0,
  });
  row({
    section: 'multi-turn',
    metric: 'second ÷ first turn TTFT',
    ours: median(second.ours) / median(first.ours),
    theirs: second.peers.map((xs, i) => median(xs) / median(first.peers[i])),
    unit: '',
    digits: 3,
    compare: 'none',
    target: 'ours ≤ 0.25',
  });
}

/** The first turn's reply as plain text (a non-streamed repeat of the same seeded request, served from the cache). */
export async function replyText(
  side: Side,
  servers: Servers,
  messages: unknown[],
  r: number,
  s: Settings,
): Promise<string> {
  if (side === 'ours') {
    const { json } = await postJson(`${servers.daemon.base}/api/chat`, {
      model: 'bench-1b',
      messages,
      stream: false,
      ...ollamaOptions(s, r, SLOT_CTX, 32),
    });
    return (json as { message: { content: string } }).message.content;
  }
  const { json } = await postJson(`${servers.llamas[side].base}/v1/chat/completions`, {
    messages,
    ...sampling(r),
    max_tokens: 32,
  });
  return (json as { choices: { message: { content: string } }[] }).choices[0].message.content;
}

/** N concurrent streams of 128 tokens with N slots on every server: aggregate tokens/s and inter-token gaps. */
export async function concurrency(s: Settings, peers: readonly Peer[], store: string): Promise<void> {
  let single = NaN;
  for (const n of s.streams) {
    const llamas = await startPeers(peers, serverOptions(s, blobs.q4, n, STREAM_SLOT_CTX, ''));
    const servers: Servers = { daemon: await startBenchDaemon(s, store, n), llamas };
    try {
      // at least ≈ 1,000 gaps per side for a p99 (127 per stream and run)
      const runs = Math.max(2, Math.ceil(s.runs / 2), Math.ceil(8 / n));
      const agg = new PerSide<number>(peers.length);
      const gap = new PerSide<number>(peers.length);
      for (let r = 0; r <= runs; r++) {
        for (const side of sidesOf(r, peers)) {
          const predict = r === 0 ? 8 : DECODE_TOKENS; // run 0 only warms up
          const started = performance.now();
          const all = await Promise.all(
            Array.from({ length: n }, (_, i) => {
              const prompt = words(2000 + n * 100 + i + r * 7, 24);
              return side === 'ours'
                ? ollamaGenerate(servers.daemon.base, {
                    model: 'bench-1b',
                    prompt,
                    raw: true,
                    ...ollamaOptions(s, i, STREAM_SLOT_CTX, predict),
                  })
                : llamaCompletion(servers.llamas[side].base, { prompt, ...llamaOptions(i, predict) });
            }),
          );
          if (r === 0) continue; // warm-up
          const last = Math.max(...all.map((t) => t.tokenTimes[t.tokenTimes.length - 1]));
          const tokens = all.reduce((sum, t) => sum + t.evalCount, 0);
          agg.push(side, (tokens / (last - started)) * 1000);
          gap.push(side, ...all.flatMap((t) => gaps(t.tokenTimes)));
        }
      }
      const ours = median(agg.ours);
      if (n === 1) single = ours;
      row({
        section: 'concurrency',
        metric: `aggregate tok/s, ${n} stream${n > 1 ? 's' : ''} (-np ${n})`,
        ours,
        theirs: agg.peers.map(median),
        unit: 'tok/s',
        target: n === 8 ? '≥ 1.0×' : '',
      });
      for (const p of [50, 99]) {
        row({
          section: 'concurrency',
          metric: `  p${p} time between tokens, ${n} stream${n > 1 ? 's' : ''} (ms)`,
          ours: percentile(gap.ours, p),
          theirs: gap.peers.map((xs) => percentile(xs, p)),
          unit: 'ms',
          digits: 1,
          target: p === 99 ? (n === 1 ? '≤ 1.1×' : '≤ 1.2×') : '',
        });
      }
      if (n > 1 && Number.isFinite(single)) {
        row({
          section: 'concurrency',
          metric: `  ours at ${n} streams ÷ ours at 1 stream`,
          ours: ours / single,
          theirs: peers.map(() => NaN),
          unit: '×',
          digits: 2,
          compare: 'none',
          target: n === 8 ? '≥ 3× where the hardware allows' : '',
        });
      }
    } finally {
      await stopAll(servers);
    }
  }
}

/** 256 inputs in one call: /api/embed vs llama-server's /v1/embeddings (bge-small-shaped bert, F16). */
export async function embeddings(s: Settings, peers: readonly Peer[], store: string): Promise<void> {
  const slots = 16;
  const llamas = await startPeers(peers, { ...serverOptions(s, blobs.bert, slots, 512, ''), embeddings: true });
  const servers: Servers = { daemon: await startBenchDaemon(s, store, 1), llamas };
  try {
    const inputs = Array.from({ length: EMBED_INPUTS }, (_, i) => words(3000 + i, 16 + (i % 4) * 8));
    const rate = new PerSide<number>(peers.length);
    for (let r = 0; r <= s.runs; r++) {
      for (const side of sidesOf(r, peers)) {
        const res =
          side === 'ours'
            ? await postJson(`${servers.daemon.base}/api/embed`, {
                model: 'bench-bert',
                input: inputs,
                options: { num_thread: s.threads },
              })
            : await postJson(`${servers.llamas[side].base}/v1/embeddings`, { input: inputs });
        const body = res.json as { embeddings?: unknown[]; data?: unknown[] };
        const got = (side === 'ours' ? body.embeddings : body.data)?.length;
        if (got !== EMBED_INPUTS) throw new Error(`embeddings: ${side} returned ${got} vectors`);
        if (r > 0) rate.push(side, (EMBED_INPUTS / res.ms) * 1000);
      }
    }
    notes.push(
      `embeddings: llama-server ran with ${llamaServerArgs({ ...serverOptions(s, 'bench-bert-f16.gguf', slots, 512, ''), bin: '', embeddings: true }).join(' ')}`,
    );
    row({
      section: 'embeddings',
      metric: `inputs/s, ${EMBED_INPUTS} inputs in one call`,
      ours: median(rate.ours),
      theirs: rate.peers.map(median),
      unit: 'inputs/s',
      target: '≥ 1.0×',
    });
  } finally {
    await stopAll(servers);
  }
}

/**
 * The cost of llama.cpp's RPC backend (daemon only): decode of the same model loaded locally and with its layers on
 * two rpc-server workers on loopback (model `bench-1b-rpc`: the same blob with `PARAMETER rpc`), runs interleaved.
 * Each worker gets all threads (they compute one after the other: layers are split across them, not run in
 * parallel); the main process keeps the token embeddings and samples. Loopback shows the protocol's per-step cost
 * (one graph-compute round trip per worker per token, plus the activations), not a network's. The workers wait
 * passively (OMP_WAIT_POLICY=passive): spinning idle workers would steal the cores of the one at work.
 */
export async function rpcDecode(s: Settings, store: string): Promise<void> {
  const bin = findRpcServerPath();
  if (!bin) throw new Error('rpc-server is not built: npm run build:native');
  const workers = [
    await startRpcWorker(bin, s.threads, join(OUT_DIR, 'rpc-worker-0.log')),
    await startRpcWorker(bin, s.threads, join(OUT_DIR, 'rpc-worker-1.log')),
  ];
  const daemon = await startBenchDaemon(s, store, 1);
  try {
    const modelfile = `FROM ${blobs.q4}\nPARAMETER rpc ${workers.map((w) => w.base).join(',')}\n`;
    const { json } = await postJson(`${daemon.base}/api/create`, { model: 'bench-1b-rpc', modelfile, stream: false });
    if ((json as { status?: string }).status !== 'success') {
      throw new Error(`create bench-1b-rpc: ${JSON.stringify(json)}`);
    }
    const rates = { local: [] as number[], rpc: [] as number[] };
    for (let r = 0; r <= s.runs; r++) {
      // run 0 loads both (a reload each time: one blob, two specs) and is not counted; the order alternates per run
      const order: ('local' | 'rpc')[] = r % 2 === 0 ? ['local', 'rpc'] : ['rpc', 'local'];
      for (const side of order) {
        const model = side === 'local' ? 'bench-1b' : 'bench-1b-rpc';
        // one request to load (the models share a blob, so switching reloads), then the measured one
        await ollamaGenerate(daemon.base, { model, prompt: 'Hello', raw: true, ...ollamaOptions(s, r, 1024, 1) });
        const t = await ollamaGenerate(daemon.base, {
          model,
          prompt: words(300 + r, 40),
          raw: true,
          ...ollamaOptions(s, r, 1024, DECODE_TOKENS),
        });
        if (r > 0) rates[side].push(decodeRate(t));
      }
    }
    const local = median(rates.local);
    const rpc = median(rates.rpc);
    const only = (metric: string, ours: number, unit: string, digits = 1) =>
      row({ section: 'rpc', metric, ours, theirs: [], unit, digits, compare: 'none' });
    only(`local: decode tok/s (${DECODE_TOKENS} tokens, client-side)`, local, 'tok/s');
    only(`2 loopback RPC workers: decode tok/s (${DECODE_TOKENS} tokens, client-side)`, rpc, 'tok/s');
    only('RPC ÷ local', rpc / local, '×', 2);
    notes.push(
      `rpc: decode tok/s per run, local ${rates.local.map((x) => x.toFixed(1)).join(', ')}; ` +
        `RPC ${rates.rpc.map((x) => x.toFixed(1)).join(', ')} (workers: ${workers.map((w) => w.base).join(', ')})`,
    );
  } finally {
    await stopServer(daemon);
    for (const w of workers) await stopServer(w);
  }
}
