import { Inject, Injectable, Optional } from '@nestjs/common';
import { InvalidRequestError, ModelNotFoundError, RequestCancelledError } from '../common/errors';
import { OptionMap } from '../common/options';
import { KeepAliveMs } from '../common/time';
import { ModelsService } from '../models';
import { GenerationHooksRegistry } from '../observability/generation-hooks';
import { TOKEN_BUDGET, TokenBudget } from '../security/limits/token-budget';
import { CompletionService, elapsedNs } from './completion.service';
import { Runner } from '../runner';
import { runLeasedJob, SchedulerService } from '../scheduler';

/** Ollama's 400 for an over-long input with `truncate: false` (§3.4). */
export const INPUT_TOO_LONG_MESSAGE = 'the input length exceeds the context length';

/** An embed request in domain form. */
export interface EmbedCommand {
  /** The model name exactly as sent. */
  model: string;
  /** `input` as sent (validated here: a string or an array of strings). */
  input: unknown;
  /** Default true: cut over-long inputs to the context. */
  truncate: boolean;
  /** > 0: cut every vector to this many dimensions, then re-normalize. */
  dimensions?: number;
  options: OptionMap;
  keepAliveMs?: KeepAliveMs;
  /** process.hrtime.bigint() at handler start. */
  startedAt: bigint;
  /**
   * Aborted when the client went away (clientGoneSignal): stops waiting for the model, cancels the engine's embed
   * job (before its next batch, or by aborting the running one) and rejects with RequestCancelledError.
   */
  signal?: AbortSignal;
}

/** The result of one embed request: one L2-normalized vector per input, in input order. */
export interface EmbedResult {
  embeddings: number[][];
  /** Handler start → answer, ns. */
  totalDurationNs: number;
  /** Scheduler wait + load, ns. */
  loadDurationNs: number;
  /** Tokens embedded over all inputs (after truncation, including BOS/EOS). */
  promptEvalCount: number;
}

/**
 * `input` → list of texts (§3.4): a string (empty → none) or an array of strings; null/absent → none.
 * @throws InvalidRequestError `invalid input type`.
 */
export function decodeEmbedInput(input: unknown): string[] {
  if (input === undefined || input === null) return [];
  if (typeof input === 'string') return input === '' ? [] : [input];
  if (Array.isArray(input) && input.every((v) => typeof v === 'string')) return input;
  throw new InvalidRequestError('invalid input type', 'input');
}

/**
 * L2-normalizes a vector, first cutting it to `dimensions` when that is > 0 and smaller than its length (§3.4).
 * A zero vector stays zero.
 * @throws InvalidRequestError `embedding contains NaN or Inf values`.
 */
export function normalizeEmbedding(vector: ArrayLike<number>, dimensions?: number): number[] {
  const n = dimensions !== undefined && dimensions > 0 && dimensions < vector.length ? dimensions : vector.length;
  const out = Array.from({ length: n }, (_, i) => vector[i]);
  let sum = 0;
  for (const v of out) {
    if (!Number.isFinite(v)) throw new InvalidRequestError('embedding contains NaN or Inf values');
    sum += v * v;
  }
  const norm = Math.sqrt(sum);
  return norm > 0 ? out.map((v) => v / norm) : out;
}

/**
 * Tokens of one input for embedding (add special tokens, parse control text). When longer than `limit` (the slot
 * context): with `truncate` the text tokens are cut so that, with the special tokens the tokenizer adds (BOS/CLS in
 * front, EOS/SEP at the end), exactly `limit` remain; without it → 400.
 * @throws InvalidRequestError `the input length exceeds the context length`.
 */
export async function embedTokens(runner: Runner, text: string, limit: number, truncate: boolean): Promise<number[]> {
  const full = await runner.tokenize(text, { addSpecial: true, parseSpecial: true });
  if (full.length <= limit) return full;
  if (!truncate) throw new InvalidRequestError(INPUT_TOO_LONG_MESSAGE, 'input');
  const plain = await runner.tokenize(text, { addSpecial: false, parseSpecial: true });
  const specials = Math.max(0, full.length - plain.length);
  const head = specials > 0 && full[0] !== plain[0] ? 1 : 0;
  const tail = full.slice(full.length - (specials - head));
  const body = plain.slice(0, Math.max(1, limit - specials));
  return [...full.slice(0, head), ...body, ...(specials - head > 0 ? tail : [])];
}

/**
 * /api/embed and /api/embeddings in domain terms (reference/ollama-api.md §3.4, §3.5): resolve, load (any model —
 * no capability is needed; a generation model gets a separate embedding context), tokenize and truncate each input,
 * embed ALL inputs of the request with one runner.embed() call (the engine batches them), normalize.
 */
@Injectable()
export class EmbedService {
  private readonly hooks: GenerationHooksRegistry;

  constructor(
    private readonly models: ModelsService,
    private readonly completion: CompletionService,
    private readonly scheduler: SchedulerService,
    @Optional() hooks?: GenerationHooksRegistry,
    @Optional() @Inject(TOKEN_BUDGET) private readonly tokenBudget?: TokenBudget,
  ) {
    this.hooks = hooks ?? new GenerationHooksRegistry();
  }

  /**
   * Embeds every input of the command, in order. Empty input still loads the model and returns no vectors. A request
   * with inputs is reported to the request hooks (kind `embed`: prompt tokens, no generated tokens). Its prompt tokens
   * are charged to the principal's token limits after the fact (no reservation: an embedding has no output to
   * estimate, and its input is bounded by the context).
   * @throws ModelNotFoundError (`model '' not found`, `model "<name>" not found, try pulling it first`, 404),
   *   InvalidRequestError (`invalid input type`, `invalid model name`, `the input length exceeds the context length`,
   *   `embedding contains NaN or Inf values`), load errors from the scheduler, RequestCancelledError once
   *   `cmd.signal` aborted (the client left).
   */
  async embed(cmd: EmbedCommand): Promise<EmbedResult> {
    const meter = this.tokenBudget?.forCurrentRequest();
    const texts = decodeEmbedInput(cmd.input);
    if (!cmd.model) throw new ModelNotFoundError('');
    const model = await this.models.resolve(
      cmd.model,
      () => `model ${JSON.stringify(cmd.model)} not found, try pulling it first`,
    );
    const { spec } = this.completion.plan(model, cmd.options);
    const tracker = texts.length > 0 ? this.hooks.begin(model.shortName, 'embed', cmd.startedAt) : undefined;
    const result = runLeasedJob(
      this.scheduler,
      { spec, keepAliveMs: cmd.keepAliveMs, modelName: model.shortName },
      async (lease, abort): Promise<EmbedResult> => {
        const runner = lease.runner;
        const inputs: number[][] = [];
        for (const t of texts) inputs.push(await embedTokens(runner, t, runner.slotContext, cmd.truncate));
        if (abort.aborted) throw new RequestCancelledError();
        const vectors = inputs.length > 0 ? await runner.embed(inputs, abort) : [];
        return {
          embeddings: vectors.map((v) => normalizeEmbedding(v, cmd.dimensions)),
          totalDurationNs: elapsedNs(cmd.startedAt),
          loadDurationNs: lease.loadDurationNs,
          promptEvalCount: inputs.reduce((n, t) => n + t.length, 0),
        };
      },
      cmd.signal,
    );
    if (meter) {
      result.then(
        (r) => meter.charge(r.promptEvalCount),
        () => undefined,
      );
    }
    if (!tracker) return result;
    return result.then(
      (r) => {
        tracker.finish(
          {
            totalDurationNs: r.totalDurationNs,
            promptEvalCount: r.promptEvalCount,
            promptCachedCount: 0,
            promptEvalDurationNs: Math.max(0, r.totalDurationNs - r.loadDurationNs),
            evalCount: 0,
            evalDurationNs: 0,
          },
          'stop',
        );
        return r;
      },
      (err: unknown) => {
        tracker.fail(err);
        throw err;
      },
    );
  }
}
