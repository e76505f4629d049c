/**
 * Bench section `speculative`: decode speed with speculative decoding against none, single stream, greedy, bench-1b
 * Q4_0 (issue 25). Through the daemon's API: n-gram drafting (`draft_ngram`), the model as its own draft (a `DRAFT`
 * of the same blob: every draft is accepted, the mechanism's ceiling) and a 2-layer draft of the same vocabulary
 * (bench-1b-draft-q4_0: the target's embeddings, output and first 2 layers). Acceptance from the daemon's
 * llamad_draft_tokens_total / llamad_draft_accepted_tokens_total.
 *
 * The bench models have random weights: they never copy their prompt, so a copy task through the API gives n-gram
 * lookup nothing to find. The greedy copy task is therefore also run at the engine level (the addon in this
 * process), with a token grammar that forces the output to be the prompt's text with one word changed — what a
 * model that copies would write — with and without n-gram drafting; the grammar's cost is in both.
 */
import { performance } from 'node:perf_hooks';
import type { NativeBinding, NativeSamplingParams } from '../binding';
import { decodeRate, ollamaGenerate } from './clients';
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
  /** POSTs JSON and returns the parsed answer; throws on a non-2xx status (bench/clients.ts postJson). */
  post(url: string, body: unknown): Promise<unknown>;
  binding(): NativeBinding;
  row(metric: string, value: number, unit: string, digits?: number): void;
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
}

/** Sum of a counter's samples for `model` in a Prometheus exposition text. */
function counter(text: string, name: string, model: string): number {
  const match = new RegExp(`^${name}\\{model="${model}"\\} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : 0;
}

async function apiRows(ctx: SpeculativeContext): Promise<void> {
  const daemon = await ctx.startDaemon();
  try {
    const base = daemon.base;
    for (const [name, modelfile] of [
      ['spec-target', `FROM ${ctx.targetFile}\n`],
      ['spec-self', `FROM ${ctx.targetFile}\nDRAFT ${ctx.targetFile}\n`],
      ['spec-2layer', `FROM ${ctx.targetFile}\nDRAFT ${ctx.draftFile}\n`],
    ]) {
      await ctx.post(`${base}/api/create`, { model: name, modelfile, stream: false });
    }
    const variants: Variant[] = [
      { label: 'no speculation', model: 'spec-target', options: {} },
      { label: 'n-gram (draft_ngram, 8 tokens)', model: 'spec-target', options: { draft_ngram: true } },
      { label: 'the model as its own draft (draft_num_predict 4)', model: 'spec-self', options: {} },
      { label: '2-layer draft of the same vocabulary (draft_num_predict 4)', model: 'spec-2layer', options: {} },
    ];
    let baseline = NaN;
    for (const v of variants) {
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
      for (let r = 0; r < Math.max(1, ctx.runs); r++) rates.push(decodeRate(await send(PREDICT)));
      const after = await scrape();
      const label = `${v.model}:latest`;
      const drafted =
        counter(after, 'llamad_draft_tokens_total', label) - counter(before, 'llamad_draft_tokens_total', label);
      const accepted =
        counter(after, 'llamad_draft_accepted_tokens_total', label) -
        counter(before, 'llamad_draft_accepted_tokens_total', label);
      const rate = median(rates);
      if (Number.isNaN(baseline)) baseline = rate;
      ctx.row(`decode tok/s, greedy, ${v.label}`, rate, 'tok/s');
      if (v.options.draft_ngram || v.model !== 'spec-target') {
        ctx.row(`  ÷ no speculation`, rate / baseline, '×', 2);
        ctx.row(`  drafted tokens accepted`, drafted > 0 ? (accepted / drafted) * 100 : 0, '%', 0);
      }
      await ctx.post(`${base}/api/generate`, { model: v.model, keep_alive: 0 });
    }
  } finally {
    await stopServer(daemon);
  }
}

/** The grammar that allows exactly `tokens`, in order (llama.cpp's `<[id]>` token syntax). */
function tokenGrammar(tokens: Int32Array): string {
  return `root ::= ${Array.from(tokens, (t) => `<[${t}]>`).join(' ')}`;
}

async function engineCopyRows(ctx: SpeculativeContext): Promise<void> {
  const binding = ctx.binding();
  const model = new binding.Model(ctx.targetFile);
  await model.load();
  const context = await binding.Context.create(model, { nCtx: NUM_CTX, nParallel: 1, nThreads: ctx.threads });
  try {
    const prompt = model.tokenize(COPY_PROMPT, true, false);
    const answer = model.tokenize(CHANGED, false, false);
    const sampling: NativeSamplingParams = { ...GREEDY, grammar: tokenGrammar(answer) };
    const run = (draft: boolean) =>
      new Promise<{ rate: number; drafted: number; accepted: number }>((resolve, reject) => {
        const started = performance.now();
        context.submit(
          {
            tokens: prompt,
            nPredict: answer.length,
            sampling,
            ...(draft ? { draft: { nMax: 8, ngram: true } } : {}),
          },
          (event) => {
            if (event.type === 'error') reject(new Error(event.message));
            if (event.type !== 'done') return;
            const t = event.timings;
            const seconds = t.predictedNs / 1e9 || (performance.now() - started) / 1000;
            resolve({ rate: (t.predictedN - 1) / seconds, drafted: t.draftN ?? 0, accepted: t.draftAcceptedN ?? 0 });
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
    const label = `greedy copy task (engine, ${answer.length} tokens forced by a token grammar)`;
    ctx.row(`decode tok/s, ${label}, no speculation`, median(plain), 'tok/s');
    ctx.row(`decode tok/s, ${label}, n-gram (8 tokens)`, median(ngram), 'tok/s');
    ctx.row(`  ÷ no speculation`, median(ngram) / median(plain), '×', 2);
    ctx.row(`  drafted tokens accepted`, drafted > 0 ? (accepted / drafted) * 100 : 0, '%', 0);
  } finally {
    await context.dispose();
    await model.dispose();
  }
}

/** Adds the section's rows: the API variants, then the engine-level copy task. */
export async function speculative(ctx: SpeculativeContext): Promise<void> {
  await apiRows(ctx);
  await engineCopyRows(ctx);
}
