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
