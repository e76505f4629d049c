import { OptionMap, OptionValue } from '../../common/options';
import type { LoadOptions, RunnerDraft } from '../../runner';

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
  /** 0 = off, -1 = the context size. */
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
}

/** Ollama's default `draft_num_predict` for a model with a draft (api.DefaultOptions; reference §4.1). */
export const DEFAULT_DRAFT_NUM_PREDICT = 4;

/**
 * Default `draft_num_predict` with `draft_ngram` (beyond Ollama): a lookup costs nothing to draft, so a longer draft
 * pays off whenever the text repeats; the engine drafts at most 4 tokens per matched token, so a short match proposes
 * fewer (docs/native.md "Speculative decoding", docs/benchmarks.md "Speculative decoding").
 */
export const DEFAULT_NGRAM_DRAFT = 16;

function num(v: OptionValue | undefined, fallback: number): number {
  return typeof v === 'number' ? v : fallback;
}

/**
 * Merges options like Ollama (reference/ollama-api.md §4.1): each key from the request wins over the model's params
 * layer (Modelfile PARAMETER), which wins over the defaults. Unknown keys were already dropped by decodeOptions.
 * num_ctx: request > Modelfile > OLLAMA_CONTEXT_LENGTH > 4096, clamped to the training context, at least 4.
 * draft_num_predict / draft_ngram: see draftOptions.
 */
export function resolveOptions(request: OptionMap, modelParams: OptionMap, defaults: OptionDefaults): EffectiveOptions {
  const merged: OptionMap = { ...modelParams, ...request };
  let numCtx = num(merged.num_ctx, defaults.contextLength > 0 ? defaults.contextLength : DEFAULT_NUM_CTX);
  if (defaults.trainContext !== undefined && defaults.trainContext > 0) {
    numCtx = Math.min(numCtx, defaults.trainContext);
  }
  numCtx = Math.max(4, Math.trunc(numCtx));
  const load: LoadOptions = {
    numCtx,
    numBatch: Math.max(1, num(merged.num_batch, 512)),
    numGpu: num(merged.num_gpu, -1),
    numThread: Math.max(0, num(merged.num_thread, defaults.threads)),
  };
  if (typeof merged.main_gpu === 'number') load.mainGpu = merged.main_gpu;
  if (typeof merged.use_mmap === 'boolean') load.useMmap = merged.use_mmap;
  // Modelfile only (decodeOptions drops a request's `rpc`): the model's own list, `none` = [], else the daemon's.
  const rpc = Array.isArray(modelParams.rpc) ? modelParams.rpc : (defaults.rpcServers ?? []);
  if (rpc.length > 0) load.rpcServers = [...rpc];
  if (defaults.flashAttention && defaults.flashAttention !== 'auto') load.flashAttention = defaults.flashAttention;
  if (defaults.kvCacheType && defaults.kvCacheType !== 'f16') load.kvCacheType = defaults.kvCacheType;
  const stop = merged.stop;
  const sampling: SamplingOptions = {
    numKeep: num(merged.num_keep, 4),
    seed: num(merged.seed, -1),
    numPredict: num(merged.num_predict, -1),
    topK: num(merged.top_k, 40),
    topP: num(merged.top_p, 0.9),
    minP: num(merged.min_p, 0),
    typicalP: num(merged.typical_p, 1),
    repeatLastN: num(merged.repeat_last_n, 64),
    temperature: num(merged.temperature, 0.8),
    repeatPenalty: num(merged.repeat_penalty, 1),
    presencePenalty: num(merged.presence_penalty, 0),
    frequencyPenalty: num(merged.frequency_penalty, 0),
    stop: Array.isArray(stop) ? stop.filter((s) => s !== '') : [],
  };
  return { load, sampling, ...draftOptions(merged, defaults.hasDraft === true) };
}

/**
 * Speculative decoding of a request (request > Modelfile > default): `draft_ngram` true drafts by prompt lookup
 * (DEFAULT_NGRAM_DRAFT tokens, beyond Ollama), else a model with a draft drafts with it (DEFAULT_DRAFT_NUM_PREDICT,
 * Ollama's default); `draft_num_predict` <= 0 turns it off (Ollama's `DraftNumPredict <= 0`).
 */
function draftOptions(merged: OptionMap, hasDraft: boolean): { draft?: RunnerDraft } {
  const ngram = merged.draft_ngram === true;
  if (!ngram && !hasDraft) return {};
  const nMax = Math.trunc(num(merged.draft_num_predict, ngram ? DEFAULT_NGRAM_DRAFT : DEFAULT_DRAFT_NUM_PREDICT));
  if (nMax <= 0) return {};
  return { draft: { nMax: Math.min(nMax, 32), ...(ngram ? { ngram } : {}) } };
}
