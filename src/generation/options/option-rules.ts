import { availableParallelism } from 'node:os';

/**
 * The bounds every load and sampling option is clamped to after the merge (issue 32 item 3: no option value may crash
 * a runner). Ollama checks types only (reference/ollama-api.md §4.1 "Type handling") and passes the numbers on to
 * llama-server (§13.1 flags, §13.3 `/completion` fields); llama.cpp then asserts or allocates on some of them (n_batch
 * below the number of sequences: `GGML_ASSERT(n_outputs_max <= cparams.n_outputs_max)`; a repeat window of 2^31
 * tokens: an 8 GiB ring buffer). So each number is brought to the nearest value the engine accepts, with the meaning
 * Ollama/llama.cpp give it kept (e.g. `top_k <= 0` is "off" there, so it stays off). The table of rules is in
 * docs/security.md "Option bounds". Wrong types are already a 400 (decodeOptions / formatParams).
 */

/** Largest int32: llama.cpp's integer fields (n_predict, top_k, n_gpu_layers, penalty_last_n, n_keep) are int32. */
export const INT32_MAX = 2 ** 31 - 1;

/** Largest finite float32: llama.cpp's sampling parameters are floats; a larger double would become ±inf. */
export const FLOAT32_MAX = 3.4028234663852886e38;

/**
 * Most KV cells of one context, tokens (the addon's limit on `nCtx`/`nBatch`, native/convert.cpp kMaxTokens): num_ctx
 * × the slots that each hold it never exceeds it.
 */
export const MAX_CONTEXT_CELLS = 2 ** 24;

/** Smallest num_ctx (Ollama's scheduler: `num_ctx ≥ 4`, reference §7.2 step 1). */
export const MIN_NUM_CTX = 4;

/** Smallest num_ctx of a model with a vision projector (Ollama's scheduler: vision models `≥ 2048`, §4.1, §7.2). */
export const MIN_VISION_NUM_CTX = 2048;

/** ggml's thread limit (GGML_MAX_N_THREADS): a thread pool never has more workers. */
export const GGML_MAX_N_THREADS = 512;

/** `x` clamped to [lo, hi]. */
export function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}

/** What the num_ctx rule needs to know about the model and the daemon. */
export interface ContextBounds {
  /** The model's training context, tokens (GGUF `context_length`); absent or 0 = unknown. */
  trainContext?: number;
  /** The model has a vision projector: Ollama's minimum of 2048 applies. */
  vision?: boolean;
  /** Slots that each hold num_ctx cells (OLLAMA_NUM_PARALLEL; 1 when the slots share one cache): default 1. */
  cellSlots?: number;
  /** Slots of the context (at least this many cells, so that each slot can hold a token): default 1. */
  slots?: number;
}

/**
 * num_ctx (tokens per slot), as Ollama: at least 4 (a vision model at least 2048), then no more than the training
 * context (§4.1 "clamped to the model's training context"; Ollama's scheduler raises to the minimum, llama-server then
 * caps at n_ctx_train), and beyond Ollama never more than MAX_CONTEXT_CELLS over all slots nor fewer cells than
 * slots (the addon refuses both: a load error). Never below 4.
 * @param numCtx the merged value (any integer).
 */
export function clampNumCtx(numCtx: number, bounds: ContextBounds = {}): number {
  let n = Math.max(numCtx, MIN_NUM_CTX, bounds.vision ? MIN_VISION_NUM_CTX : 0);
  if (bounds.trainContext !== undefined && bounds.trainContext > 0) n = Math.min(n, bounds.trainContext);
  n = Math.min(n, Math.floor(MAX_CONTEXT_CELLS / Math.max(1, bounds.cellSlots ?? 1)));
  return Math.trunc(Math.max(n, MIN_NUM_CTX, bounds.slots ?? 1));
}

/**
 * num_batch (tokens per llama_decode): at least 1, at most num_ctx. Ollama passes it as `-b/-ub` (§13.1); llama.cpp
 * caps n_batch at n_ctx for causal models itself, and a batch of 0 tokens cannot decode. (The runner also raises it
 * to the number of slots: src/runner/context-params.ts batchParams.)
 */
export function clampNumBatch(numBatch: number, numCtx: number): number {
  return clamp(numBatch, 1, numCtx);
}

/**
 * num_gpu (layers offloaded): any negative is -1 = automatic (Ollama sends `-ngl` only when it is set, §13.1); more
 * than int32 layers means all of them.
 */
export function clampNumGpu(numGpu: number): number {
  return numGpu < 0 ? -1 : Math.min(numGpu, INT32_MAX);
}

/** main_gpu (device index, only compared between runners on a CPU build): -1 (none) to int32. */
export function clampMainGpu(mainGpu: number): number {
  return clamp(mainGpu, -1, INT32_MAX);
}

/**
 * The most threads num_thread may ask for: the logical CPUs the process may use, at most ggml's 512. Ollama passes
 * `-t N` as is (§13.1); more threads than CPUs only make ggml's spinning barriers wait for each other (2^31 threads on
 * a 2-core machine stalls every request of that model), so they are capped.
 * @param cpus logical CPUs (default os.availableParallelism()).
 */
export function maxThreads(cpus: number = availableParallelism()): number {
  return clamp(cpus, 1, GGML_MAX_N_THREADS);
}

/** num_thread (also LLAMAD_THREADS): 0 or below = automatic (0); else at most {@link maxThreads}. */
export function clampNumThread(numThread: number, limit: number = maxThreads()): number {
  return numThread <= 0 ? 0 : Math.min(numThread, limit);
}

/** num_keep (tokens kept at a context shift): -1 = the whole prompt (llama-server `n_keep`); below -1 → -1; ≤ num_ctx. */
export function clampNumKeep(numKeep: number, numCtx: number): number {
  return clamp(numKeep, -1, numCtx);
}

/** seed: negative = random (-1); else used modulo 2^32 (llama.cpp's seed is a uint32, as llama-server takes it). */
export function clampSeed(seed: number): number {
  return seed < 0 ? -1 : seed % 2 ** 32;
}

/**
 * num_predict (tokens to generate): every negative is -1 = unbounded (Ollama's -1; the runner then caps it at 10 ×
 * num_ctx, §13.3); 0 generates nothing; at most int32.
 */
export function clampNumPredict(numPredict: number): number {
  return numPredict < 0 ? -1 : Math.min(numPredict, INT32_MAX);
}

/** top_k: 0 or below = off (0; llama.cpp skips top-k for k <= 0); at most int32 (more than the vocabulary = all). */
export function clampTopK(topK: number): number {
  return clamp(topK, 0, INT32_MAX);
}

/** top_p, min_p, typical_p: probabilities, [0, 1] (top_p / typical_p 1 = off, min_p 0 = off in llama.cpp). */
export function clampProbability(p: number): number {
  return clamp(p, 0, 1);
}

/**
 * repeat_last_n (tokens the penalties look back on): -1 = num_ctx (Ollama, §4.1); below -1 = off (0), as llama.cpp's
 * penalties sampler (`max(penalty_last_n, 0)`); at most num_ctx (the window llama.cpp allocates is this long).
 * @returns the window in tokens: 0 to num_ctx (-1 already resolved).
 */
export function clampRepeatLastN(repeatLastN: number, numCtx: number): number {
  if (repeatLastN === -1) return numCtx;
  return clamp(repeatLastN, 0, numCtx);
}

/** temperature: 0 or below = greedy (0, as llama.cpp); at most FLOAT32_MAX. */
export function clampTemperature(temperature: number): number {
  return clamp(temperature, 0, FLOAT32_MAX);
}

/**
 * repeat_penalty (divides the logits of repeated tokens): 0 or below means nothing in llama.cpp (a division by zero
 * or a sign flip) and the engine refuses it, so it is off (1.0); at most FLOAT32_MAX.
 */
export function clampRepeatPenalty(penalty: number): number {
  return penalty <= 0 ? 1 : Math.min(penalty, FLOAT32_MAX);
}

/** presence_penalty, frequency_penalty: any float32 (±FLOAT32_MAX). */
export function clampFloat32(x: number): number {
  return clamp(x, -FLOAT32_MAX, FLOAT32_MAX);
}
