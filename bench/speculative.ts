/**
 * Bench section `speculative`: decode speed with speculative decoding against none, single stream, greedy, bench-1b
 * Q4_0 (issue 25), daemon and each llama-server peer side by side. Through the HTTP APIs: n-gram drafting (daemon
 * `draft_ngram`; llama-server `--spec-type ngram-simple`), the model as its own draft (a `DRAFT` of the same blob;
 * `-md` the same file: every draft is accepted, the mechanism's ceiling) and a 2-layer draft of the same vocabulary
 * (bench-1b-draft-q4_0: the target's embeddings, output and first 2 layers). The daemon's acceptance comes from
 * llamad_draft_tokens_total / llamad_draft_accepted_tokens_total.
 *
 * The bench models have random weights: they never copy their prompt, so a copy task gives n-gram lookup nothing to
 * find. The greedy copy task therefore also runs with a token grammar that forces the output to be the prompt's text
 * with one word changed — what a model that copies would write — with and without n-gram drafting; the grammar's
 * cost is in both. The daemon has no grammar field in its API, so its side of that task runs at the engine level (the
 * addon in this process, the engine's own timings); llama-server's runs through /completion's `grammar` (its own
 * timings).
 */
import { execFileSync } from 'node:child_process';
import type { NativeBinding, NativeSamplingParams } from '../binding';
import { llamaCompletion, ollamaGenerate, type StreamTiming } from './clients';
import { stopServer, type RunningServer } from './servers';
import { median } from './stats';
import { GREEDY } from '../test/utils/sampling';

/** What the section needs from bench.ts. */
export interface SpeculativeContext {
  runs: number;
  threads: number;
  /** The target and the 2-layer draft, Q4_0 GGUF files. */
  targetFile: string;
  draftFile: string;
  startDaemon(): Promise<RunningServer>;
  /** Starts every peer (llama-server) on the target with these extra arguments. */
  startPeers(extra: string[]): Promise<RunningServer[]>;
  peerCount: number;
  /** POSTs JSON and returns the parsed answer; throws on a non-2xx status (bench/clients.ts postJson). */
  post(url: string, body: unknown): Promise<unknown>;
  binding(): NativeBinding;
  /** Adds a row: the daemon's figure and one per peer (NaN where not measured). */
  row(metric: string, ours: number, theirs: number[], unit: string, digits: number, compare: 'ratio' | 'none'): void;
}

const PREDICT = 128;
const NUM_CTX = 2048;
const TEXT =
  'The committee met on Tuesday to review the budget for the new library. After a long discussion, the members ' +
  "agreed to fund the reading room, the children's corner and a small cafe near the entrance, and asked the " +
  'architect to present revised drawings at the next meeting, together with a schedule for the works and an ' +
  'estimate of the running costs for the first three years.';
const CHANGED = TEXT.replace('Tuesday', 'Wednesday');
const COPY_PROMPT = `Repeat the following text exactly, but write "Wednesday" instead of "Tuesday".\n\n${TEXT}\n\n`;

interface Variant {
  label: string;
  model: string;
  options: Record<string, unknown>;
  /** llama-server's arguments for the same. */
  peerArgs: string[];
}

interface Figures {
  rate: number;
  /** Accepted ÷ drafted, % (NaN where not known). */
  acceptance: number;
}

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

async function daemonFigures(ctx: SpeculativeContext, base: string, v: Variant): Promise<Figures> {
  const scrape = async () => (await fetch(`${base}/metrics`)).text();
  const send = (predict: number) =>
    ollamaGenerate(base, {
      model: v.model,
      prompt: COPY_PROMPT,
      raw: true,
      keep_alive: '10m',
      options: { temperature: 0, num_ctx: NUM_CTX, num_predict: predict, num_thread: ctx.threads, ...v.options },
    });
  await send(4); // loads the model
  const before = await scrape();
  const rates: number[] = [];
  for (let r = 0; r < Math.max(1, ctx.runs); r++) rates.push(daemonRate(await send(PREDICT)));
  const after = await scrape();
  const label = `${v.model}:latest`;
  const delta = (name: string) => counter(after, name, label) - counter(before, name, label);
  const drafted = delta('llamad_draft_tokens_total');
  await ctx.post(`${base}/api/generate`, { model: v.model, keep_alive: 0 });
  return {
    rate: median(rates),
    acceptance: drafted > 0 ? (delta('llamad_draft_accepted_tokens_total') / drafted) * 100 : 0,
  };
}

async function peerFigures(ctx: SpeculativeContext, v: Variant, body: Record<string, unknown>): Promise<number[]> {
  const servers = await ctx.startPeers(v.peerArgs);
  const out: number[] = [];
  try {
    for (const server of servers) {
      await llamaCompletion(server.base, { ...body, n_predict: 4 });
      const rates: number[] = [];
      for (let r = 0; r < Math.max(1, ctx.runs); r++) rates.push(llamaRate(await llamaCompletion(server.base, body)));
      out.push(median(rates));
    }
  } finally {
    for (const server of servers) await stopServer(server);
  }
  return out;
}

const VARIANTS = (ctx: SpeculativeContext): Variant[] => [
  { label: 'no speculation', model: 'spec-target', options: {}, peerArgs: [] },
  {
    label: 'n-gram (draft_ngram, 16 tokens; --spec-type ngram-simple)',
    model: 'spec-target',
    options: { draft_ngram: true },
    peerArgs: ['--spec-type', 'ngram-simple'],
  },
  {
    label: 'the model as its own draft (4 tokens)',
    model: 'spec-self',
    options: {},
    peerArgs: ['-md', ctx.targetFile, '--spec-draft-n-max', '4'],
  },
  {
    label: '2-layer draft of the same vocabulary (4 tokens)',
    model: 'spec-2layer',
    options: {},
    peerArgs: ['-md', ctx.draftFile, '--spec-draft-n-max', '4'],
  },
];

async function apiRows(ctx: SpeculativeContext): Promise<void> {
  const variants = VARIANTS(ctx);
  const ours: Figures[] = [];
  const daemon = await ctx.startDaemon();
  try {
    for (const [name, modelfile] of [
      ['spec-target', `FROM ${ctx.targetFile}\n`],
      ['spec-self', `FROM ${ctx.targetFile}\nDRAFT ${ctx.targetFile}\n`],
      ['spec-2layer', `FROM ${ctx.targetFile}\nDRAFT ${ctx.draftFile}\n`],
    ]) {
      await ctx.post(`${daemon.base}/api/create`, { model: name, modelfile, stream: false });
    }
    // Creating wrote blobs: their writeback would slow the first measurements down.
    execFileSync('sync');
    for (const v of variants) ours.push(await daemonFigures(ctx, daemon.base, v));
  } finally {
    await stopServer(daemon);
  }
  const body = { prompt: COPY_PROMPT, n_predict: PREDICT, temperature: 0, cache_prompt: true };
  const theirs: number[][] = [];
  for (const v of variants) theirs.push(await peerFigures(ctx, v, body));
  const none = Array.from({ length: ctx.peerCount }, () => NaN);
  variants.forEach((v, i) => {
    ctx.row(`decode tok/s, greedy, ${v.label}`, ours[i].rate, theirs[i], 'tok/s', 1, 'ratio');
    if (i === 0) return;
    ctx.row(
      `  ÷ no speculation`,
      ours[i].rate / ours[0].rate,
      theirs[i].map((t, p) => t / theirs[0][p]),
      '×',
      2,
      'none',
    );
    ctx.row(`  drafted tokens accepted (daemon)`, ours[i].acceptance, none, '%', 0, 'none');
  });
}

/** The grammar that allows exactly `tokens`, in order (llama.cpp's `<[id]>` token syntax). */
function tokenGrammar(tokens: Int32Array): string {
  return `root ::= ${Array.from(tokens, (t) => `<[${t}]>`).join(' ')}`;
}

/** The engine-level copy task: decode rates without and with n-gram drafting, and the acceptance. */
async function engineCopy(
  ctx: SpeculativeContext,
  grammar: string,
): Promise<{ plain: number; ngram: number; acceptance: number; tokens: number }> {
  const binding = ctx.binding();
  const model = new binding.Model(ctx.targetFile);
  await model.load();
  const context = await binding.Context.create(model, { nCtx: NUM_CTX, nParallel: 1, nThreads: ctx.threads });
  try {
    const prompt = model.tokenize(COPY_PROMPT, true, false);
    const answer = model.tokenize(CHANGED, false, false);
    const sampling: NativeSamplingParams = { ...GREEDY, grammar };
    const run = (draft: boolean) =>
      new Promise<{ rate: number; drafted: number; accepted: number }>((resolve, reject) => {
        context.submit(
          { tokens: prompt, nPredict: answer.length, sampling, ...(draft ? { draft: { nMax: 16, ngram: true } } : {}) },
          (event) => {
            if (event.type === 'error') reject(new Error(event.message));
            if (event.type !== 'done') return;
            const t = event.timings;
            resolve({
              rate: ((t.predictedN - 1) / t.predictedNs) * 1e9,
              drafted: t.draftN ?? 0,
              accepted: t.draftAcceptedN ?? 0,
            });
          },
        );
      });
    await run(false); // warm-up (and the prompt in the slot's cache for every later run)
    const plain: number[] = [];
    const ngram: number[] = [];
    let drafted = 0;
    let accepted = 0;
    for (let r = 0; r < Math.max(1, ctx.runs); r++) {
      plain.push((await run(false)).rate);
      const spec = await run(true);
      ngram.push(spec.rate);
      drafted += spec.drafted;
      accepted += spec.accepted;
    }
    return {
      plain: median(plain),
      ngram: median(ngram),
      acceptance: drafted > 0 ? (accepted / drafted) * 100 : 0,
      tokens: answer.length,
    };
  } finally {
    await context.dispose();
    await model.dispose();
  }
}

async function copyRows(ctx: SpeculativeContext): Promise<void> {
  const binding = ctx.binding();
  const vocab = new binding.Model(ctx.targetFile, { vocabOnly: true });
  await vocab.load();
  const answer = vocab.tokenize(CHANGED, false, false);
  await vocab.dispose();
  const grammar = tokenGrammar(answer);
  const ours = await engineCopy(ctx, grammar);
  const body = { prompt: COPY_PROMPT, n_predict: answer.length, temperature: 0, grammar, cache_prompt: true };
  const [plain, ngram] = [VARIANTS(ctx)[0], VARIANTS(ctx)[1]];
  const theirsPlain = await peerFigures(ctx, plain, body);
  const theirsNgram = await peerFigures(ctx, ngram, body);
  const none = Array.from({ length: ctx.peerCount }, () => NaN);
  const label = `greedy copy task (${ours.tokens} tokens forced by a token grammar; daemon: engine level)`;
  ctx.row(`decode tok/s, ${label}, no speculation`, ours.plain, theirsPlain, 'tok/s', 1, 'ratio');
  ctx.row(`decode tok/s, ${label}, n-gram`, ours.ngram, theirsNgram, 'tok/s', 1, 'ratio');
  ctx.row(
    `  ÷ no speculation`,
    ours.ngram / ours.plain,
    theirsNgram.map((t, p) => t / theirsPlain[p]),
    '×',
    2,
    'none',
  );
  ctx.row(`  drafted tokens accepted (daemon)`, ours.acceptance, none, '%', 0, 'none');
}

/** Adds the section's rows: the API variants, then the copy task. */
export async function speculative(ctx: SpeculativeContext): Promise<void> {
  await apiRows(ctx);
  await copyRows(ctx);
}
