/**
 * Bench section `speculative`: decode speed with speculative decoding against none, single stream, greedy, bench-1b
 * Q4_0 (issue 25), daemon and each llama-server peer side by side. Through the HTTP APIs: n-gram drafting (daemon
 * `draft_ngram`; llama-server `--spec-type ngram-simple`), the model as its own draft (a `DRAFT` of the same blob;
 * `--spec-type draft-simple -md` the same file: every draft is accepted, the mechanism's ceiling; without
 * `--spec-type` llama-server drafts nothing) and a 2-layer draft of the same vocabulary (bench-1b-draft-q4_0: the
 * target's embeddings, output and first 2 layers). The daemon's acceptance comes from llamad_draft_tokens_total /
 * llamad_draft_accepted_tokens_total, llama-server's from its timings (draft_n, draft_n_accepted).
 *
 * The bench models have random weights: they never copy their prompt, so a copy task gives n-gram lookup nothing to
 * find. The greedy copy task therefore also runs with a token grammar that forces the output to be the prompt's text
 * with one word changed — what a model that copies would write — with and without n-gram drafting; the grammar's
 * cost is in both. The daemon has no grammar field in its API, so its side of that task runs at the engine level (the
 * addon in this process, the engine's own timings); llama-server's runs through /completion's `grammar` (its own
 * timings). The same kind of task through both HTTP APIs, forced by a JSON Schema `format`, is in
 * bench/speculative-api.ts; the agreeing pair (a draft that accepts everything, about 5× cheaper) in
 * bench/speculative-pair.ts.
 */
import { execFileSync } from 'node:child_process';
import type { NativeSamplingParams } from '../binding';
import { stopServer, type RunningServer } from './servers';
import { GREEDY } from '../test/utils/sampling';
import { apiWorkloadRows } from './speculative-api';
import {
  CHANGED,
  COPY_PROMPT,
  daemonPlayer,
  daemonSideBySide,
  gainRows,
  NUM_CTX,
  sideBySide,
  startDaemonsPerModel,
  takeTurns,
  type Figures,
  type Player,
  type Sample,
  type SideBySide,
  type SpeculativeContext,
  type Variant,
} from './speculative-common';
import { agreeingPairRows } from './speculative-pair';

export type { SpeculativeContext } from './speculative-common';

const VARIANTS = (ctx: SpeculativeContext): Variant[] => [
  { label: 'no speculation', model: 'spec-target', options: {}, peerArgs: [] },
  {
    label: 'n-gram (draft_ngram, up to 48 tokens; --spec-type ngram-simple)',
    model: 'spec-target',
    options: { draft_ngram: true },
    peerArgs: ['--spec-type', 'ngram-simple'],
  },
  {
    label: 'the model as its own draft (4 tokens)',
    model: 'spec-self',
    options: {},
    peerArgs: ['--spec-type', 'draft-simple', '-md', ctx.targetFile, '--spec-draft-n-max', '4'],
  },
  {
    label: '2-layer draft of the same vocabulary (4 tokens)',
    model: 'spec-2layer',
    options: {},
    peerArgs: ['--spec-type', 'draft-simple', '-md', ctx.draftFile, '--spec-draft-n-max', '4'],
  },
];

/**
 * Rounds of the draft-cost part at least (whatever `--runs`): its rows are held to 0.97× of no speculation (issue 35),
 * a 3 % margin; on a shared host one request's rate strays by 5–10 %, so the median of 3 or 7 rounds' ratios does not
 * resolve it (a standard error of about 9 % ÷ √rounds).
 */
const DRAFT_COST_ROUNDS = 24;

/**
 * The API variants: the daemon (one per model) and the peers side by side for `ctx.runs` rounds (unless `only` is
 * 'draft-cost'), then the draft-cost part on the same daemons: no speculation, the model as its own draft and the
 * 2-layer draft, the daemon alone, {@link DRAFT_COST_ROUNDS} rounds at least.
 */
async function apiRows(ctx: SpeculativeContext, only?: 'draft-cost'): Promise<void> {
  const variants = VARIANTS(ctx);
  const daemon = await ctx.startDaemon();
  const more: RunningServer[] = [];
  let measured: SideBySide | undefined;
  let costs: Figures[];
  // No speculation, the model as its own draft, the 2-layer draft: indices into `variants` (and their daemons).
  const costIndex = [0, 2, 3];
  const costVariants = costIndex.map((i) => variants[i]);
  const costRounds = Math.max(ctx.runs, DRAFT_COST_ROUNDS);
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
    const bases = await startDaemonsPerModel(ctx, variants, daemon, more);
    if (only !== 'draft-cost') measured = await daemonSideBySide(ctx, bases, variants);
    costs = await takeTurns(
      costIndex.map((i) => daemonPlayer(ctx, bases[i], variants[i])),
      costRounds,
    );
  } finally {
    for (const server of [daemon, ...more]) await stopServer(server);
  }
  if (measured) {
    const { ours, theirs } = measured;
    variants.forEach((v, i) => {
      const rates = theirs[i].map((f) => f.rate);
      ctx.row(`decode tok/s, greedy, ${v.label}`, ours[i].rate, rates, 'tok/s', 1, 'ratio');
      if (i === 0) return;
      gainRows(ctx, '  ', { spec: ours[i], plain: ours[0] }, { spec: theirs[i], plain: theirs[0] });
    });
  }
  const alone = `daemon alone, ${costRounds} rounds`;
  ctx.row(`draft cost (${alone}): decode tok/s, greedy, no speculation`, costs[0].rate, [], 'tok/s', 1, 'none');
  costVariants.slice(1).forEach((v, i) => {
    ctx.row(`  ${v.label}, tok/s`, costs[1 + i].rate, [], 'tok/s', 1, 'none');
    gainRows(ctx, '    ', { spec: costs[1 + i], plain: costs[0] }, { spec: [], plain: [] });
  });
}

/** The grammar that allows exactly `tokens`, in order (llama.cpp's `<[id]>` token syntax). */
function tokenGrammar(tokens: Int32Array): string {
  return `root ::= ${Array.from(tokens, (t) => `<[${t}]>`).join(' ')}`;
}

/**
 * The engine-level copy task side by side with the peers: the addon in this process (one context, one slot) without
 * and with n-gram drafting, and llama-server through /completion with the same token grammar, all in turns.
 */
async function engineCopy(ctx: SpeculativeContext, grammar: string, variants: Variant[]): Promise<SideBySide> {
  const binding = ctx.binding();
  const model = new binding.Model(ctx.targetFile);
  await model.load();
  const context = await binding.Context.create(model, { nCtx: NUM_CTX, nParallel: 1, nThreads: ctx.threads });
  try {
    const prompt = model.tokenize(COPY_PROMPT, true, false);
    const answer = model.tokenize(CHANGED, false, false);
    const sampling: NativeSamplingParams = { ...GREEDY, grammar };
    const run = (draft: boolean) =>
      new Promise<Sample>((resolve, reject) => {
        context.submit(
          { tokens: prompt, nPredict: answer.length, sampling, ...(draft ? { draft: { nMax: 48, ngram: true } } : {}) },
          (event) => {
            if (event.type === 'error') reject(new Error(event.message));
            if (event.type !== 'done') return;
            const t = event.timings;
            resolve({
              rate: ((t.predictedN - 1) / t.predictedNs) * 1e9,
              drafted: t.draftN ?? 0,
              accepted: t.draftAcceptedN ?? 0,
              tokens: t.predictedN,
            });
          },
        );
      });
    // The warm-up puts the prompt in the slot's cache for every later run.
    const player = (draft: boolean): Player => ({ warm: async () => void (await run(draft)), run: () => run(draft) });
    const workload = { prompt: COPY_PROMPT, predict: answer.length, peerBody: { grammar } };
    return await sideBySide(ctx, [player(false), player(true)], variants, workload);
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
  const variants = VARIANTS(ctx).slice(0, 2);
  const { ours, theirs } = await engineCopy(ctx, tokenGrammar(answer), variants);
  const rates = (fs: Figures[]) => fs.map((f) => f.rate);
  const label = `greedy copy task (${answer.length} tokens forced by a token grammar; daemon: engine level)`;
  ctx.row(`decode tok/s, ${label}, no speculation`, ours[0].rate, rates(theirs[0]), 'tok/s', 1, 'ratio');
  ctx.row(`decode tok/s, ${label}, n-gram`, ours[1].rate, rates(theirs[1]), 'tok/s', 1, 'ratio');
  gainRows(ctx, '  ', { spec: ours[1], plain: ours[0] }, { spec: theirs[1], plain: theirs[0] });
}

/**
 * Adds the section's rows: the API variants and the draft-cost part, the engine-level copy task, the agreeing pair
 * (bench/speculative-pair.ts), then the copy and edit tasks through the HTTP API (bench/speculative-api.ts). With
 * `only` = 'draft-cost' (bench section `draft-cost`), the draft-cost part alone.
 */
export async function speculative(ctx: SpeculativeContext, only?: 'draft-cost'): Promise<void> {
  await apiRows(ctx, only);
  if (only === 'draft-cost') return;
  await copyRows(ctx);
  await agreeingPairRows(ctx);
  await apiWorkloadRows(ctx);
}
