import { Injectable } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { freemem, totalmem } from 'node:os';
import { FACTS_MAX_ARRAY_ITEMS, readGguf } from '../models/gguf';
import { RunnerSpec } from '../runner';
import { projectorBytes } from './projector-memory';

/**
 * Bytes per KV-cache element by cache type (ggml's type sizes): f16 2; q8_0 a block of 32 in 34 bytes (32 int8 + an
 * f16 scale); q4_0 32 in 18 (16 bytes of nibbles + an f16 scale). f16 is llama.cpp's default.
 */
export const KV_BYTES_PER_ELEMENT = { f16: 2, q8_0: 34 / 32, q4_0: 18 / 32 } as const;
/** Fixed part of the compute-buffer surcharge, bytes (graph metadata, scratch): 64 MiB. */
const COMPUTE_BASE_BYTES = 64 * 1024 * 1024;

/** What the scheduler needs to know about memory (reference/ollama-api.md §7.3, §13.4). Tests swap it. */
export interface MemoryProbe {
  /**
   * Predicted resident bytes of a runner loaded with `spec`: weights (the GGUF file size) + KV cache
   * (2 × n_layer × n_ctx_total × n_embd_kv × the element size of `spec.kvCacheType`, see KV_BYTES_PER_ELEMENT;
   * n_ctx_total = numCtx × numParallel, or numCtx when the slots share the cache: kvUnified) + a batch/compute
   * surcharge; with a draft model (`draftModelPath`) the same again for the draft, whose context holds n_ctx_total +
   * 33 × numParallel cells (native/draft_context.h); with a projector (`projectorPath`) its file and the compute
   * buffer of each encoder it carries, vision and/or audio (projector-memory.ts); plus the host-RAM prompt cache the
   * runner may fill (`spec.cacheRamBytes`: its share of the LLAMAD_CACHE_RAM budget, kept in the runner process's own
   * memory, so it counts against free memory like the weights). Never rejects: unknown facts count as 0.
   */
  estimate(spec: RunnerSpec): Promise<number>;
  /** Bytes the system can still give to a new runner: free memory, capped by the cgroup limit when there is one. */
  free(): number;
  /** Bytes of memory in all (or the cgroup limit, when lower). */
  total(): number;
}

/**
 * DI token of the scheduler's MemoryProbe: SystemMemoryProbe by default (LlamadModule's core provides it, and
 * SchedulerService falls back to one when nothing is bound); tests and library hosts may bind their own.
 */
export const MEMORY_PROBE = Symbol('MEMORY_PROBE');

/** The model facts the estimate needs, from GGUF metadata. */
interface KvFacts {
  fileSize: number;
  nLayer: number;
  /** Width of K (and V) per token per layer: head_dim × n_head_kv. */
  nEmbdKv: number;
  nEmbd: number;
  nVocab: number;
  /** Attention heads (of the queries). */
  nHead: number;
  /** K/V heads (GGUF `<arch>.attention.head_count_kv`, else nHead). */
  nHeadKv: number;
  /** An embedding model (GGUF `<arch>.pooling_type` set): its context keeps llama.cpp's flash attention. */
  embedding: boolean;
}

function num(v: unknown): number {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number') return v;
  if (Array.isArray(v) && v.length > 0) return num(v[0]);
  return 0;
}

/** Extra cells per slot of a draft model's context (native/draft_context.h: kMaxDraft + 1). */
const DRAFT_CELLS_PER_SLOT = 33;

/**
 * KV cache and compute buffers of a context over `nCtxTotal` cells, bytes: 2 × n_layer × cells × n_embd_kv × the
 * element size of the spec's KV type; compute = the fixed part + activations (n_embd wide, f32) and logits (n_vocab
 * wide) of one batch.
 */
function contextBytes(f: KvFacts, nCtxTotal: number, spec: RunnerSpec): { kv: number; compute: number } {
  const kv = Math.ceil(2 * f.nLayer * nCtxTotal * f.nEmbdKv * KV_BYTES_PER_ELEMENT[spec.kvCacheType ?? 'f16']);
  const compute = COMPUTE_BASE_BYTES + 4 * spec.numBatch * (4 * f.nEmbd + f.nVocab) + attentionScoreBytes(f, spec);
  return { kv, compute };
}

/**
 * Whether the CPU's flash attention takes this model's q heads in groups (2..16 q heads per K/V head), which makes
 * the addon resolve OLLAMA_FLASH_ATTENTION unset (`auto`) to on for it (native/context.h ResolveFlashAttn).
 */
export function groupsQueryHeads(nHead: number, nHeadKv: number): boolean {
  if (nHeadKv <= 0 || nHead % nHeadKv !== 0) return false;
  const group = nHead / nHeadKv;
  return group >= 2 && group <= 16;
}

/**
 * The attention scores a generation context without flash attention keeps in its compute buffer, bytes: one f32
 * per query of a batch (numBatch), cell of a KV stream (numCtx) and head. A CPU context runs without it when
 * OLLAMA_FLASH_ATTENTION is off, or unset for a model without grouped-query attention (groupsQueryHeads;
 * binding.d.ts NativeContextParams.flashAttn); an embedding model's context keeps it, and over RPC workers the
 * attention runs there.
 */
function attentionScoreBytes(f: KvFacts, spec: RunnerSpec): number {
  if (spec.flashAttention === 'on' || f.embedding || (spec.rpcServers?.length ?? 0) > 0) return 0;
  if ((spec.flashAttention ?? 'auto') === 'auto' && groupsQueryHeads(f.nHead, f.nHeadKv)) return 0;
  return 4 * spec.numBatch * spec.numCtx * f.nHead;
}

/** Reads a cgroup (v2, then v1) memory limit in bytes; undefined when unlimited or not readable. */
function cgroupLimit(): number | undefined {
  for (const path of ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes']) {
    try {
      const raw = readFileSync(path, 'utf8').trim();
      if (!/^\d+$/.test(raw)) continue;
      const limit = Number(raw);
      // v1 reports "unlimited" as a huge page-aligned number.
      if (limit > 0 && limit < 2 ** 60) return limit;
    } catch {
      // not in a cgroup with a limit
    }
  }
  return undefined;
}

/** Reads a cgroup's current usage in bytes (v2, then v1). */
function cgroupUsage(): number | undefined {
  for (const path of ['/sys/fs/cgroup/memory.current', '/sys/fs/cgroup/memory/memory.usage_in_bytes']) {
    try {
      const raw = readFileSync(path, 'utf8').trim();
      if (/^\d+$/.test(raw)) return Number(raw);
    } catch {
      // not available
    }
  }
  return undefined;
}

/**
 * The production MemoryProbe: GGUF metadata (cached per weights path; blobs never change) and os.freemem/totalmem,
 * capped by the cgroup limit. CPU only: there is no VRAM to account for, so size_vram is always 0.
 */
@Injectable()
export class SystemMemoryProbe implements MemoryProbe {
  private readonly facts = new Map<string, Promise<KvFacts>>();
  private readonly projectors = new Map<string, Promise<number>>();

  /** @inheritdoc */
  async estimate(spec: RunnerSpec): Promise<number> {
    const f = await this.factsOf(spec.modelPath);
    const ramCache = Math.max(0, spec.cacheRamBytes ?? 0);
    const nCtxTotal = spec.kvUnified ? spec.numCtx : spec.numCtx * Math.max(1, spec.numParallel);
    const { kv, compute } = contextBytes(f, nCtxTotal, spec);
    if ((spec.rpcServers?.length ?? 0) > 0 && spec.numGpu < 0) {
      // Every layer on RPC workers (num_gpu automatic): their weights and KV cache live there; this machine keeps the
      // token embeddings (counted as one layer's share of the file) and the compute buffers (docs/native.md "RPC").
      return Math.ceil(f.fileSize / (f.nLayer + 1)) + compute + ramCache;
    }
    let draft = 0;
    if (spec.draftModelPath) {
      const d = await this.factsOf(spec.draftModelPath);
      const cells = contextBytes(d, nCtxTotal + DRAFT_CELLS_PER_SLOT * Math.max(1, spec.numParallel), spec);
      draft = d.fileSize + cells.kv + cells.compute;
    }
    const projector = spec.projectorPath ? await this.projectorOf(spec.projectorPath) : 0;
    return f.fileSize + kv + compute + draft + projector + ramCache;
  }

  /** @inheritdoc */
  free(): number {
    const limit = cgroupLimit();
    const sys = freemem();
    if (limit === undefined) return sys;
    const used = cgroupUsage() ?? 0;
    return Math.max(0, Math.min(sys, limit - used));
  }

  /** @inheritdoc */
  total(): number {
    const limit = cgroupLimit();
    return limit === undefined ? totalmem() : Math.min(limit, totalmem());
  }

  private projectorOf(path: string): Promise<number> {
    return memoized(this.projectors, path, projectorBytes);
  }

  private factsOf(path: string): Promise<KvFacts> {
    return memoized(this.facts, path, readKvFacts);
  }
}

/** The cached promise of `load(path)`, made once per path (model files are read once per daemon). */
function memoized<T>(cache: Map<string, Promise<T>>, path: string, load: (path: string) => Promise<T>): Promise<T> {
  let pending = cache.get(path);
  if (!pending) {
    pending = load(path);
    cache.set(path, pending);
  }
  return pending;
}

/** GGUF facts for the estimate; a missing or unreadable file gives zeros (the load itself reports the error). */
async function readKvFacts(path: string): Promise<KvFacts> {
  const zero: KvFacts = {
    fileSize: 0,
    nLayer: 0,
    nEmbdKv: 0,
    nEmbd: 0,
    nVocab: 0,
    nHead: 0,
    nHeadKv: 0,
    embedding: false,
  };
  try {
    const fileSize = (await stat(path)).size;
    try {
      const gguf = await readGguf(path, { maxArrayItems: FACTS_MAX_ARRAY_ITEMS });
      const md = gguf.metadata as Record<string, unknown>;
      const arch = typeof md['general.architecture'] === 'string' ? md['general.architecture'] : '';
      const nEmbd = num(md[`${arch}.embedding_length`]);
      const nHead = num(md[`${arch}.attention.head_count`]);
      const nHeadKv = num(md[`${arch}.attention.head_count_kv`]) || nHead;
      const keyLength = num(md[`${arch}.attention.key_length`]) || (nHead > 0 ? nEmbd / nHead : 0);
      const tokens = md['tokenizer.ggml.tokens'];
      return {
        fileSize,
        nLayer: num(md[`${arch}.block_count`]),
        nEmbdKv: keyLength * nHeadKv,
        nEmbd,
        nVocab: num(md[`${arch}.vocab_size`]) || (Array.isArray(tokens) ? tokens.length : 0),
        nHead,
        nHeadKv,
        embedding: md[`${arch}.pooling_type`] !== undefined,
      };
    } catch {
      return { ...zero, fileSize };
    }
  } catch {
    return zero;
  }
}
