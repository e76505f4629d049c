/**
 * Bench section `speculative`, the agreeing pair (issue 35): bench-agree-f16 (16 layers 1024 wide, llama-spm
 * vocabulary, F16; blocks 1–15 write nothing into the residual stream, so its logits are its first block's) and
 * bench-agree-draft-f16 (that first block alone, about a fifth of the target's weight bytes): a draft that agrees on
 * every greedy token, what a well-matched real pair gets at its best. Single stream, greedy, the copy prompt,
 * 128 tokens, server-reported decode rates. Daemon: no speculation; the Modelfile `DRAFT` at draft_num_predict 4
 * (its default), 8 and 16; n-gram drafting (`draft_ngram`). llama-server: none; `--spec-type draft-simple -md` at
 * `--spec-draft-n-max` 4, 8 and 16 (without `--spec-type` it drafts nothing); `--spec-type ngram-simple`.
 */
import { execFileSync } from 'node:child_process';
import { stopServer, type RunningServer } from './servers';
import {
  daemonSideBySide,
  gainRows,
  startDaemonsPerModel,
  type Figures,
  type SideBySide,
  type SpeculativeContext,
  type Variant,
} from './speculative-common';

/** The draft lengths measured on both sides (tokens per draft at most). */
const DRAFT_LENGTHS = [4, 8, 16];
/** The daemon's default draft_num_predict (src/generation/options/options.ts): no option is sent for it. */
const DAEMON_DEFAULT_DRAFT = 4;

function variants(ctx: SpeculativeContext): { plain: Variant; drafts: Variant[]; ngram: Variant } {
  const peerModel = ctx.agreeTargetFile;
  return {
    plain: { label: 'no speculation', model: 'agree-target', options: {}, peerArgs: [], peerModel },
    drafts: DRAFT_LENGTHS.map((n) => ({
      label: `1-layer draft, ≤ ${n} tokens (DRAFT, draft_num_predict ${n}; draft-simple -md, --spec-draft-n-max ${n})`,
      model: 'agree-draft',
      options: n === DAEMON_DEFAULT_DRAFT ? {} : { draft_num_predict: n },
      peerArgs: ['--spec-type', 'draft-simple', '-md', ctx.agreeDraftFile, '--spec-draft-n-max', String(n)],
      peerModel,
    })),
    ngram: {
      label: 'n-gram (draft_ngram; --spec-type ngram-simple)',
      model: 'agree-target',
      options: { draft_ngram: true },
      peerArgs: ['--spec-type', 'ngram-simple'],
      peerModel,
    },
  };
}

/** The figures with the highest rate. */
function best(xs: Figures[]): Figures {
  return xs.reduce((a, b) => (b.rate > a.rate ? b : a));
}

/** Adds the agreeing pair's rows: no speculation, each draft length, the best of them, n-gram drafting. */
export async function agreeingPairRows(ctx: SpeculativeContext): Promise<void> {
  const v = variants(ctx);
  const all = [v.plain, ...v.drafts, v.ngram];
  const daemon = await ctx.startDaemon();
  const more: RunningServer[] = [];
  let measured: SideBySide;
  try {
    for (const [name, modelfile] of [
      ['agree-target', `FROM ${ctx.agreeTargetFile}\n`],
      ['agree-draft', `FROM ${ctx.agreeTargetFile}\nDRAFT ${ctx.agreeDraftFile}\n`],
    ]) {
      await ctx.post(`${daemon.base}/api/create`, { model: name, modelfile, stream: false });
    }
    execFileSync('sync'); // the new blobs' writeback would slow the first measurements down
    measured = await daemonSideBySide(ctx, await startDaemonsPerModel(ctx, all, daemon, more), all);
  } finally {
    for (const server of [daemon, ...more]) await stopServer(server);
  }
  // theirs[variant][peer]
  const { ours, theirs } = measured;

  const prefix = 'agreeing pair (bench-agree F16, 16 layers, 1–15 silent; 1-layer draft)';
  const rates = (fs: Figures[]) => fs.map((f) => f.rate);
  const [plainOurs, plainTheirs] = [ours[0], theirs[0]];
  ctx.row(`decode tok/s, ${prefix}, no speculation`, plainOurs.rate, rates(plainTheirs), 'tok/s', 1, 'ratio');
  v.drafts.forEach((x, i) => {
    ctx.row(`  ${x.label}, tok/s`, ours[1 + i].rate, rates(theirs[1 + i]), 'tok/s', 1, 'ratio');
  });
  const draftOurs = best(ours.slice(1, 1 + v.drafts.length));
  const draftTheirs = plainTheirs.map((_, p) => best(theirs.slice(1, 1 + v.drafts.length).map((fs) => fs[p])));
  const lengths = DRAFT_LENGTHS.join(', ');
  ctx.row(
    `  1-layer draft, each side's best of ${lengths} tokens, tok/s`,
    draftOurs.rate,
    rates(draftTheirs),
    'tok/s',
    1,
    'ratio',
  );
  gainRows(ctx, '    ', { spec: draftOurs, plain: plainOurs }, { spec: draftTheirs, plain: plainTheirs });
  const ngramOurs = ours[ours.length - 1];
  const ngramTheirs = theirs[theirs.length - 1];
  ctx.row(`  ${v.ngram.label}, tok/s`, ngramOurs.rate, rates(ngramTheirs), 'tok/s', 1, 'ratio');
  gainRows(ctx, '    ', { spec: ngramOurs, plain: plainOurs }, { spec: ngramTheirs, plain: plainTheirs });
}
