import type { NativeContextParams } from '../../binding';
import { physicalCores } from './cpu-threads';
import type { RunnerSpec } from './runner';

// The native context parameters a RunnerSpec asks for (LlamaRunner's contexts for generation and embeddings).

/** KV cells of a runner's context: numCtx shared by the slots (kvUnified), else numCtx per slot. */
export function totalCells(spec: RunnerSpec): number {
  return spec.kvUnified ? spec.numCtx : spec.numCtx * spec.numParallel;
}

/**
 * Thread parameters of a context: an explicit num_thread as asked; otherwise `threads` (the scheduler's share of the
 * cores, default all physical cores) with thread pools sized for all physical cores, so that setThreads() can give it
 * more later.
 */
export function threadParams(
  spec: RunnerSpec,
  threads: number | undefined,
): Pick<NativeContextParams, 'nThreads' | 'nThreadsMax'> {
  if (spec.numThread > 0) return { nThreads: spec.numThread };
  const cores = physicalCores();
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

/** The host-RAM prompt cache of a generation context (none when the spec has none or 0). */
export function cacheRamParams(spec: RunnerSpec): Pick<NativeContextParams, 'cacheRamBytes'> {
  return spec.cacheRamBytes !== undefined && spec.cacheRamBytes > 0 ? { cacheRamBytes: spec.cacheRamBytes } : {};
}

/** The context parameter for the spec's LoRA adapters (none when it has none). */
export function loraParams(spec: RunnerSpec): Pick<NativeContextParams, 'loraAdapters'> {
  const paths = spec.adapterPaths ?? [];
  return paths.length > 0 ? { loraAdapters: paths.map((path) => ({ path, scale: 1 })) } : {};
}
