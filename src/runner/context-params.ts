import type { NativeContextParams } from '../../binding';
import { machinePhysicalCores } from './cpu-threads';
import type { RunnerModelInfo, RunnerSpec } from './runner';

// The native context parameters a RunnerSpec asks for (LlamaRunner's contexts for generation and embeddings).

/** KV cells of a runner's context: numCtx shared by the slots (kvUnified), else numCtx per slot. */
export function totalCells(spec: RunnerSpec): number {
  return spec.kvUnified ? spec.numCtx : spec.numCtx * spec.numParallel;
}

/**
 * Sequences an embedding context decodes together (native/context_plan.cpp kEmbedSeqMax): its n_seq_max, so its batch
 * must hold at least that many outputs.
 */
export const EMBED_SEQ_MAX = 64;

/** Most cells (and batch tokens) the addon accepts for a context (native/convert.cpp kMaxTokens). */
const MAX_CELLS = 2 ** 24;

/** ggml's thread limit (GGML_MAX_N_THREADS). */
const MAX_THREADS = 512;

/**
 * Batch of a generation context, tokens: num_batch, but never fewer than the slots and never more than the context's
 * cells. llama.cpp sizes its output buffer for n_batch outputs and asserts that a batch's outputs, at least one per
 * sequence (n_seq_max = the slots), fit: `num_batch: 0` (→ 1) with 4 slots was `GGML_ASSERT(n_outputs_max <=
 * cparams.n_outputs_max)` and a dead runner (issue 32 item 3). The merge already keeps num_batch in [1, num_ctx]
 * (generation/options option-rules clampNumBatch); this is the guard at the one place options become native params.
 */
export function batchParams(spec: RunnerSpec): Pick<NativeContextParams, 'nBatch'> {
  const cells = totalCells(spec);
  const batch = Math.min(Math.max(1, Math.trunc(spec.numBatch)), cells);
  return { nBatch: Math.max(batch, Math.max(1, spec.numParallel)) };
}

/**
 * Cells and batch (= ubatch: a non-causal model sees a whole input in one ubatch) of an embedding context, tokens.
 * Its n_seq_max is max(slots, {@link EMBED_SEQ_MAX}), and llama.cpp reserves its worst-case graph with
 * min(n_ctx, n_ubatch) tokens split over n_seq_max sequences: unless that count is a multiple of n_seq_max, mean
 * pooling asserts (`GGML_ASSERT(ggml_can_mul_mat(a, b))`, e.g. num_ctx 96 on a BERT model), and below n_seq_max the
 * outputs do not fit (`n_outputs_max`, e.g. num_ctx 4 on a causal model, whose n_batch llama.cpp caps at n_ctx). So
 * the batch is max(num_batch, num_ctx) rounded up to a multiple of n_seq_max, and the context has at least that many
 * cells. Inputs are still limited to num_ctx tokens (the embed service truncates or refuses them first).
 */
export function embeddingSizes(spec: RunnerSpec): Pick<NativeContextParams, 'nCtx' | 'nBatch' | 'nUbatch'> {
  const seqMax = Math.max(1, spec.numParallel, EMBED_SEQ_MAX);
  const wanted = Math.max(1, Math.trunc(spec.numBatch), spec.numCtx);
  const batch = Math.min(Math.ceil(wanted / seqMax), Math.floor(MAX_CELLS / seqMax)) * seqMax;
  return { nCtx: Math.min(Math.max(totalCells(spec), batch), MAX_CELLS), nBatch: batch, nUbatch: batch };
}

/**
 * Parameters of an embedding context for `spec` (an embedding model's context, or a generation model's second one):
 * {@link embeddingSizes}, the slots, threads ({@link threadParams}) and KV type.
 */
export function embeddingContextParams(spec: RunnerSpec, threads: number | undefined): NativeContextParams {
  return {
    ...embeddingSizes(spec),
    nParallel: spec.numParallel,
    embeddings: true,
    ...(spec.kvUnified ? { kvUnified: true } : {}),
    ...threadParams(spec, threads),
    ...kvParams(spec),
  };
}

/**
 * Thread parameters of a context: an explicit num_thread as asked (at most ggml's 512); otherwise `threads` (the scheduler's share of the
 * cores, default all physical cores) with thread pools sized for all physical cores, so that setThreads() can give it
 * more later.
 */
export function threadParams(
  spec: RunnerSpec,
  threads: number | undefined,
): Pick<NativeContextParams, 'nThreads' | 'nThreadsMax'> {
  if (spec.numThread > 0) return { nThreads: Math.min(Math.trunc(spec.numThread), MAX_THREADS) };
  const cores = machinePhysicalCores();
  return { nThreads: Math.min(cores, Math.max(1, threads ?? cores)), nThreadsMax: cores };
}

/**
 * Flash attention and KV cache type of a context (OLLAMA_FLASH_ATTENTION, OLLAMA_KV_CACHE_TYPE): only what the spec
 * sets, so an unset spec keeps the addon's defaults (`auto`, f16). The type applies to K and V, as Ollama's
 * `--cache-type-k/--cache-type-v`.
 */
export function kvParams(spec: RunnerSpec): Pick<NativeContextParams, 'flashAttn' | 'typeK' | 'typeV'> {
  return {
    ...(spec.flashAttention ? { flashAttn: spec.flashAttention } : {}),
    ...(spec.kvCacheType ? { typeK: spec.kvCacheType, typeV: spec.kvCacheType } : {}),
  };
}

/**
 * What a load's log line says of flash attention: that it is off because the model runs on the CPU without
 * grouped-query attention, when OLLAMA_FLASH_ATTENTION was left unset (`auto`) and the context resolved it so
 * (binding.d.ts NativeContextParams.flashAttn); '' otherwise (on, set by the user, or llama.cpp's own choice).
 */
export function flashAttentionNote(spec: RunnerSpec, info: RunnerModelInfo): string {
  return !spec.flashAttention && info.flashAttention === 'off'
    ? ', flash attention off on the CPU (OLLAMA_FLASH_ATTENTION=1 turns it on)'
    : '';
}

/** The host-RAM prompt cache of a generation context (none when the spec has none or 0). */
export function cacheRamParams(spec: RunnerSpec): Pick<NativeContextParams, 'cacheRamBytes'> {
  return spec.cacheRamBytes !== undefined && spec.cacheRamBytes > 0 ? { cacheRamBytes: spec.cacheRamBytes } : {};
}
