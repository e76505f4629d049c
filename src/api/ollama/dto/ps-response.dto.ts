import { ModelDetails } from '../../../models';

/** One entry of GET /api/ps (Ollama `api.ProcessModelResponse`, reference/ollama-api.md §3.7). */
export interface ProcessModelWire {
  name: string;
  model: string;
  /** Estimated resident bytes (weights file + KV cache + compute buffers), as the scheduler accounts it. */
  size: number;
  /** Hex sha256 of the manifest bytes. */
  digest: string;
  details: ModelDetails;
  /** ISO 8601 UTC (`…Z`) when the runner leaves memory; far future for keep-alive forever. */
  expires_at: string;
  /**
   * Bytes in this machine's accelerator memory (0 on a CPU build). Layers on RPC workers are not counted here: they
   * are in `size` and in `devices`.
   */
  size_vram: number;
  /** Effective per-request context (num_ctx after clamping to the training context), tokens. */
  context_length: number;
  /**
   * Beyond Ollama: where the bytes of `size` live, largest first: `CPU` (system RAM), local devices (`CUDA0`, …) and
   * each RPC worker device (`RPC0[10.0.0.2:50052]`, with its `endpoint`). Absent when not measured.
   */
  devices?: ProcessDeviceWire[];
  /**
   * Beyond Ollama: the runner's slots and KV cache now. Absent when the runner does not report them.
   */
  parallel?: ProcessParallelWire;
  /** Beyond Ollama: the OS process id of the model's runner process (absent for a runner inside the daemon). */
  pid?: number;
  /** Beyond Ollama (which lists loaded models only): true on the row of a model still loading. */
  loading?: true;
  /** Beyond Ollama: load progress in [0, 1] of a model still loading (llama.cpp's load progress callback). */
  load_progress?: number;
}

/** ProcessModelWire.parallel (beyond Ollama): slots and KV cache cells of a loaded model. */
export interface ProcessParallelWire {
  /** Slots (sequences decoded together): OLLAMA_NUM_PARALLEL, 4 when unset. */
  slots: number;
  /** Slots generating now (those waiting for KV cells included). */
  slots_busy: number;
  /** Of the busy slots, those waiting for cells of the shared KV cache. */
  slots_waiting: number;
  /**
   * Requests queued for a free slot: at the runner's slot gate (fair queuing) or in the runner (or for KV cells to
   * start).
   */
  queued: number;
  /** Whether the slots share one KV cache of `context_length` cells (OLLAMA_NUM_PARALLEL unset). */
  kv_shared: boolean;
  /** KV cache size, cells (tokens). */
  kv_cells: number;
  /** KV cells held by the generations in flight. */
  kv_cells_used: number;
  /** Threads of the runner's next decode step, when known. */
  threads?: number;
  /**
   * The host-RAM prompt cache (LLAMAD_CACHE_RAM; absent when off): conversations and bytes of KV state it keeps; since
   * the load, prompts restored from it and the prompt tokens those restores spared evaluating; `max_bytes`: this
   * runner's share of the daemon-wide budget, reserved by the scheduler at load (`bytes` never exceeds it, and the
   * `max_bytes` of all loaded models add up to at most LLAMAD_CACHE_RAM).
   */
  ram_cache?: { entries: number; bytes: number; hits: number; tokens: number; max_bytes: number };
}

/** One entry of ProcessModelWire.devices (beyond Ollama). */
export interface ProcessDeviceWire {
  name: string;
  /** Bytes (weights, KV cache, compute buffers) on this device. */
  size: number;
  /** For an RPC worker's device: its `host:port`. */
  endpoint?: string;
}

/** GET /api/ps. */
export interface ProcessResponseWire {
  models: ProcessModelWire[];
}
