import { OptionMap, OptionValue } from '../../common/options';
import type { LoadOptions, RunnerDraft } from '../../runner';
import { capContext, capOutputTokens, OptionCaps } from './option-caps';
import {
  clampFloat32,
  clampMainGpu,
  clampNumBatch,
  clampNumCtx,
  clampNumGpu,
  clampNumKeep,
  clampNumPredict,
  clampNumThread,
  clampProbability,
  clampRepeatLastN,
  clampRepeatPenalty,
  clampSeed,
  clampTemperature,
  clampTopK,
  GGML_MAX_N_THREADS,
  maxThreads,
} from './option-rules';

/** Ollama's default num_ctx when neither the request, the Modelfile nor OLLAMA_CONTEXT_LENGTH sets one (§4.1). */
export const DEFAULT_NUM_CTX = 4096;

/** Per-request sampling and stopping options (§4.1 second table), camelCase. */
export interface SamplingOptions {
  /** Tokens kept from the prompt start when truncating. */
  numKeep: number;
  /** -1 = random. */
  seed: number;
  /** Tokens to generate; -1 = until end of generation or the context is full. */
  numPredict: number;
  topK: number;
  topP: number;
  minP: number;
  typicalP: number;
  /** Tokens the penalties look back on, 0 (off) to num_ctx (a requested -1 is resolved to num_ctx). */
  repeatLastN: number;
  temperature: number;
  repeatPenalty: number;
  presencePenalty: number;
  frequencyPenalty: number;
  stop: string[];
}

/** Options after the merge: request ← Modelfile PARAMETER ← defaults. */
export interface EffectiveOptions {
  load: LoadOptions;
  sampling: SamplingOptions;
  /** Speculative decoding of the request (`draft_num_predict`, `draft_ngram`); absent = none. */
  draft?: RunnerDraft;
}

/** Defaults that depend on the environment and the model. */
export interface OptionDefaults {
  /** OLLAMA_CONTEXT_LENGTH (0 = unset → 4096). */
  contextLength: number;
  /** LLAMAD_THREADS (0 = addon default). */
  threads: number;
  /** LLAMAD_RPC_SERVERS (empty = none): the workers of a model whose Modelfile has no `PARAMETER rpc`. */
  rpcServers?: string[];
  /** The model's training context in tokens, when known: num_ctx is clamped to it. */
  trainContext?: number;
  /** OLLAMA_FLASH_ATTENTION (absent = `auto`); set on the load options when not `auto`. */
  flashAttention?: LoadOptions['flashAttention'];
  /** The KV cache type after Ollama's rule (config/kvCacheSettings; absent = `f16`); set on them when not `f16`. */
  kvCacheType?: LoadOptions['kvCacheType'];
  /** Whether the model has a draft layer: then requests draft with it (`draft_num_predict`, default 4). */
  hasDraft?: boolean;
  /** LLAMAD_DRAFT_FIXED: drafts skip the engine's cost model (RunnerDraft.fixed). */
  draftFixed?: boolean;
  /** Whether the model has a vision projector: num_ctx is at least 2048 then (Ollama's scheduler, §7.2). */
  vision?: boolean;
  /**
   * The runner's slots (OLLAMA_NUM_PARALLEL, config/parallelPlan) and whether they share one KV cache: bounds num_ctx
   * so that the context's cells stay within what the engine accepts (option-rules clampNumCtx). Default: 1 slot.
   */
  parallel?: { numParallel: number; kvUnified: boolean };
  /**
   * Most threads a num_thread option may ask for (default option-rules maxThreads(): the logical CPUs, at most 512);
   * LLAMAD_THREADS (`threads`) is only capped at 512.
   */
  maxThreads?: number;
  /**
   * The caller's policy caps (tenant `max_context`, `max_output_tokens`; option-caps.ts): num_ctx is capped before
   * the engine bounds (whose minimum still wins), num_predict after them (unlimited becomes the cap). Absent = none.
   */
  caps?: OptionCaps;
}

/** Ollama's default `draft_num_predict` for a model with a draft (api.DefaultOptions; reference §4.1). */
export const DEFAULT_DRAFT_NUM_PREDICT = 4;

/**
 * Default `draft_num_predict` with `draft_ngram` (beyond Ollama), llama-server's `--spec-type ngram-simple` draft size
 * (`--spec-ngram-size-m` 48): a lookup costs nothing to draft and a copied span runs long, so the cap is high; the
 * engine's cost model drafts fewer where the acceptance or the verify cost calls for it (docs/native.md "Speculative
 * decoding", docs/benchmarks.md "Speculative decoding").
 */
export const DEFAULT_NGRAM_DRAFT = 48;

/** Most tokens drafted per step (the engine's kMaxDraft, native/slot.h); a longer `draft_num_predict` is capped. */
export const MAX_DRAFT = 64;

/** The option's number (truncated by decodeOptions for ints), else `fallback`; NaN/±Infinity count as unset. */
function num(v: OptionValue | undefined, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : fallback;
}

/** An integer option's number (the fraction dropped, as Go's int fields), else `fallback`. */
function int(v: OptionValue | undefined, fallback: number): number {
  return Math.trunc(num(v, fallback));
}

/**
 * Merges options like Ollama (reference/ollama-api.md §4.1): each key from the request wins over the model's params
 * layer (Modelfile PARAMETER), which wins over the defaults. Unknown keys were already dropped by decodeOptions.
 * num_ctx: request > Modelfile > OLLAMA_CONTEXT_LENGTH > 4096. Then every number is clamped to the range the engine
 * accepts (option-rules.ts; docs/security.md "Option bounds"), so that no option value can crash a runner: num_ctx 4
 * (vision 2048) to the training context, num_batch 1 to num_ctx, int32 / float32 ranges, probabilities in [0, 1]…
 * draft_num_predict / draft_ngram: see draftOptions. A tenant policy's caps (`defaults.caps`) lower num_ctx and
 * num_predict (docs/security.md "Tenants").
 * @returns the effective load and sampling options; never throws.
 */
export function resolveOptions(request: OptionMap, modelParams: OptionMap, defaults: OptionDefaults): EffectiveOptions {
  const merged: OptionMap = { ...modelParams, ...request };
  const parallel = defaults.parallel ?? { numParallel: 1, kvUnified: false };
  const numCtx = clampNumCtx(
    capContext(
      int(merged.num_ctx, defaults.contextLength > 0 ? defaults.contextLength : DEFAULT_NUM_CTX),
      defaults.caps,
    ),
    {
      trainContext: defaults.trainContext,
      vision: defaults.vision,
      cellSlots: parallel.kvUnified ? 1 : parallel.numParallel,
      slots: parallel.kvUnified ? parallel.numParallel : 1,
    },
  );
  const load: LoadOptions = {
    numCtx,
    numBatch: clampNumBatch(int(merged.num_batch, 512), numCtx),
    numGpu: clampNumGpu(int(merged.num_gpu, -1)),
    // A client's num_thread is capped at the CPUs; the operator's LLAMAD_THREADS only at ggml's limit.
    numThread:
      typeof merged.num_thread === 'number'
        ? clampNumThread(int(merged.num_thread, 0), defaults.maxThreads ?? maxThreads())
        : clampNumThread(Math.trunc(defaults.threads), GGML_MAX_N_THREADS),
  };
  if (typeof merged.main_gpu === 'number') load.mainGpu = clampMainGpu(Math.trunc(merged.main_gpu));
  if (typeof merged.use_mmap === 'boolean') load.useMmap = merged.use_mmap;
  // Modelfile only (decodeOptions drops a request's `rpc`): the model's own list, `none` = [], else the daemon's.
  const rpc = Array.isArray(modelParams.rpc) ? modelParams.rpc : (defaults.rpcServers ?? []);
  if (rpc.length > 0) load.rpcServers = [...rpc];
  if (defaults.flashAttention && defaults.flashAttention !== 'auto') load.flashAttention = defaults.flashAttention;
  if (defaults.kvCacheType && defaults.kvCacheType !== 'f16') load.kvCacheType = defaults.kvCacheType;
  const stop = merged.stop;
  const sampling: SamplingOptions = {
    numKeep: clampNumKeep(int(merged.num_keep, 4), numCtx),
    seed: clampSeed(int(merged.seed, -1)),
    numPredict: capOutputTokens(clampNumPredict(int(merged.num_predict, -1)), defaults.caps),
    topK: clampTopK(int(merged.top_k, 40)),
    topP: clampProbability(num(merged.top_p, 0.9)),
    minP: clampProbability(num(merged.min_p, 0)),
    typicalP: clampProbability(num(merged.typical_p, 1)),
    repeatLastN: clampRepeatLastN(int(merged.repeat_last_n, 64), numCtx),
    temperature: clampTemperature(num(merged.temperature, 0.8)),
    repeatPenalty: clampRepeatPenalty(num(merged.repeat_penalty, 1)),
    presencePenalty: clampFloat32(num(merged.presence_penalty, 0)),
    frequencyPenalty: clampFloat32(num(merged.frequency_penalty, 0)),
    stop: Array.isArray(stop) ? stop.filter((s) => typeof s === 'string' && s !== '') : [],
  };
  return { load, sampling, ...draftOptions(merged, defaults.hasDraft === true, defaults.draftFixed === true) };
}

/**
 * Speculative decoding of a request (request > Modelfile > default): `draft_ngram` true drafts by prompt lookup
 * (DEFAULT_NGRAM_DRAFT tokens, beyond Ollama), else a model with a draft drafts with it (DEFAULT_DRAFT_NUM_PREDICT,
 * Ollama's default); `draft_num_predict` <= 0 turns it off (Ollama's `DraftNumPredict <= 0`). `fixed`
 * (LLAMAD_DRAFT_FIXED) drafts that many at every step, without the cost model.
 */
function draftOptions(merged: OptionMap, hasDraft: boolean, fixed: boolean): { draft?: RunnerDraft } {
  const ngram = merged.draft_ngram === true;
  if (!ngram && !hasDraft) return {};
  const nMax = Math.trunc(num(merged.draft_num_predict, ngram ? DEFAULT_NGRAM_DRAFT : DEFAULT_DRAFT_NUM_PREDICT));
  if (nMax <= 0) return {};
  return { draft: { nMax: Math.min(nMax, MAX_DRAFT), ...(ngram ? { ngram } : {}), ...(fixed ? { fixed } : {}) } };
}
