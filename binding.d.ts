/**
 * TypeScript contract of the RAW native addon (build/<backend>/Release/llamad.node), written by hand.
 *
 * Only what native/*.cpp registers in its Init() functions is declared here: no convenience methods, no defaults.
 * The TS wrappers in src/native/ add validation, defaults, domain errors and Observables on top.
 * test/native/binding-shape.test.ts loads the real addon and checks that every member declared here exists.
 *
 * Units: sizes in bytes, durations in nanoseconds, token counts in tokens.
 * Every error thrown or rejected by the addon is an Error with a `code` property of type NativeErrorCode.
 */

/** Stable error codes set as `err.code` on every error created natively (native/errors.h). */
export type NativeErrorCode =
  | 'LLAMA_MODEL_LOAD_FAILED'
  | 'LLAMA_CONTEXT_CREATE_FAILED'
  | 'LLAMA_EXCEED_CONTEXT'
  | 'LLAMA_DECODE_FAILED'
  | 'LLAMA_DISPOSED'
  | 'LLAMA_INVALID_ARGUMENT'
  | 'LLAMA_CANCELLED'
  | 'LLAMA_OOM'
  | 'LLAMA_TEMPLATE_FAILED'
  | 'LLAMA_QUANTIZE_FAILED'
  | 'LLAMA_INTERNAL';

export interface NativeError extends Error {
  code: NativeErrorCode;
}

/** Parameters of `new Model(path, params)`; every field optional, llama.cpp defaults otherwise. */
export interface NativeModelParams {
  /** Layers to offload to the GPU; -1 = all, 0 = CPU only (default 0 on CPU builds, all on GPU builds). */
  nGpuLayers?: number;
  /** Memory-map the file (default true). */
  useMmap?: boolean;
  /** Load only the vocabulary (tokenizer tests, token counting). */
  vocabOnly?: boolean;
}

/** Facts about a loaded model, from llama_model_* getters. */
export interface NativeModelInfo {
  /** llama_model_desc, e.g. "llama ?B F16". */
  description: string;
  /** Parameter count. */
  nParams: number;
  /** Bytes of all tensors. */
  size: number;
  /** Training context length, tokens. */
  nCtxTrain: number;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  nVocab: number;
  hasEncoder: boolean;
  hasDecoder: boolean;
  /** Beginning-of-sequence token id, -1 when the vocabulary has none. */
  bos: number;
  /** End-of-sequence token id, -1 when the vocabulary has none. */
  eos: number;
  /** Whether tokenize(addSpecial=true) adds BOS / EOS. */
  addBos: boolean;
  addEos: boolean;
}

/** One message for the model's own (Jinja) chat template. */
export interface NativeChatMessage {
  role: string;
  content: string;
}

/** Options of Model.applyChatTemplate. */
export interface NativeChatTemplateOptions {
  /** Append the assistant turn header so generation continues as the assistant (default true). */
  addGenerationPrompt?: boolean;
  /** Template text to use instead of the model's tokenizer.chat_template. */
  template?: string;
}

/** A llama_model. Created unloaded; `load()` reads the GGUF off the JS thread. */
export interface NativeModel {
  /**
   * Loads the model on a worker thread. `onProgress` receives load progress in [0, 1] on the JS thread.
   * Rejects with LLAMA_MODEL_LOAD_FAILED (bad file, unknown architecture) or LLAMA_CANCELLED after abortLoad().
   */
  load(onProgress?: (progress: number) => void): Promise<void>;
  /** Aborts a load in progress (the pending load() rejects with LLAMA_CANCELLED). No-op otherwise. */
  abortLoad(): void;
  /** Whether load() has completed and dispose() has not been called. */
  readonly loaded: boolean;
  info(): NativeModelInfo;
  /** All GGUF key/values as llama.cpp renders them (llama_model_meta_*): strings, arrays summarised. */
  metadata(): Record<string, string>;
  /** tokenizer.chat_template of the GGUF, or null when it has none. */
  chatTemplate(): string | null;
  /**
   * Renders messages with the model's Jinja chat template through llama.cpp common/chat (throws LLAMA_TEMPLATE_FAILED).
   * As in llama-server, a leading BOS / trailing EOS text is left out when tokenize(addSpecial=true) adds it.
   */
  applyChatTemplate(messages: NativeChatMessage[], options?: NativeChatTemplateOptions): string;
  /** Tokenizes UTF-8 text. `addSpecial` adds BOS/EOS as the vocab says; `parseSpecial` parses control tokens in text. */
  tokenize(text: string, addSpecial: boolean, parseSpecial: boolean): Int32Array;
  /** Detokenizes token ids; `removeSpecial` drops BOS/EOS, `unparseSpecial` renders control tokens as text. */
  detokenize(tokens: Int32Array, removeSpecial?: boolean, unparseSpecial?: boolean): string;
  /** Frees the model after every context created from it was disposed. Idempotent. */
  dispose(): Promise<void>;
}

/** Parameters of `new Context(model, params)`. */
export interface NativeContextParams {
  /** Total KV cache size in tokens over all slots (llama n_ctx); each slot gets nCtx / nParallel. */
  nCtx: number;
  /** Logical batch size in tokens (n_batch, default 512). */
  nBatch?: number;
  /** Physical batch size in tokens (n_ubatch, default = nBatch). */
  nUbatch?: number;
  /** Number of slots (n_seq_max): sequences decoded together in one llama_decode per step (default 1). */
  nParallel?: number;
  /** Threads for generation (default: hardware concurrency). */
  nThreads?: number;
  /** Threads for prompt processing (default: nThreads). */
  nThreadsBatch?: number;
  /** Flash attention: 'auto' (default), 'on', 'off'. */
  flashAttn?: 'auto' | 'on' | 'off';
  /** KV cache element type: 'f16' (default), 'q8_0', 'q4_0'. */
  typeK?: string;
  typeV?: string;
}

/** Sampling parameters of one task (Ollama option names in camelCase; defaults applied by the TS layer). */
export interface NativeSamplingParams {
  /** 0 = greedy. */
  temperature: number;
  /** <= 0 disables. */
  topK: number;
  /** >= 1 disables. */
  topP: number;
  /** <= 0 disables. */
  minP: number;
  /** >= 1 disables. */
  typicalP: number;
  /** 1 disables. */
  repeatPenalty: number;
  /** Tokens considered by the penalties; 0 disables, -1 = context size. */
  repeatLastN: number;
  presencePenalty: number;
  frequencyPenalty: number;
  /** Seed of the dist sampler; -1 (or any negative) = random. */
  seed: number;
  /** GBNF grammar the output must follow (structured output), empty or absent for none. */
  grammar?: string;
}

/** One generation request for a slot. */
export interface NativeTaskParams {
  /** Prompt token ids (non-empty). */
  tokens: Int32Array;
  /** Maximum tokens to generate; -1 = until EOG or the slot's context is full. */
  nPredict: number;
  sampling: NativeSamplingParams;
  /** Stop strings: generation ends when the output contains one; it is not emitted. */
  stop?: string[];
  /** Ignore end-of-generation tokens (benchmarks). */
  ignoreEos?: boolean;
}

/** Prompt and generation timings of one task (llama.cpp server's `timings`). */
export interface NativeTimings {
  /** Prompt tokens evaluated (after KV prefix reuse). */
  promptN: number;
  /** Prompt tokens of the task, including reused ones. */
  promptTotal: number;
  /** Nanoseconds spent evaluating the prompt. */
  promptNs: number;
  /** Tokens generated (one `token` event each, including a final end-of-generation token). */
  predictedN: number;
  /** Nanoseconds spent generating (first sampled token to last). */
  predictedNs: number;
}

/** Why a task ended: EOG token, stop string, nPredict/context limit, or cancel(). */
export type NativeStopReason = 'eog' | 'stop' | 'length' | 'cancelled';

/**
 * Events of one task, delivered in order on the JS thread, never merged.
 * A task emits zero or more `token` events then exactly one `done` or `error`.
 */
export type NativeEvent =
  | {
      type: 'token';
      taskId: number;
      /** Valid UTF-8 text of this step (may be '' while an incomplete UTF-8 sequence or a possible stop string is held back). */
      text: string;
      /** Token id sampled at this step. */
      token: number;
    }
  | {
      type: 'done';
      taskId: number;
      reason: NativeStopReason;
      /** The stop string that matched, when reason is 'stop'. */
      stopString?: string;
      timings: NativeTimings;
    }
  | {
      type: 'error';
      taskId: number;
      code: NativeErrorCode;
      message: string;
    };

/** Runtime state of a context, for /api/ps and the scheduler. */
export interface NativeContextStats {
  nCtx: number;
  /** Per-slot context, tokens. */
  nCtxSlot: number;
  nParallel: number;
  /** Slots with a task. */
  activeSlots: number;
  /** Tasks waiting for a free slot. */
  queuedTasks: number;
  /** Bytes of the KV cache. */
  kvSize: number;
}

/**
 * A llama_context with its own decode thread and `nParallel` slots; every active slot is batched into one
 * llama_decode per step (continuous batching). Tasks beyond the free slots wait in a FIFO queue.
 */
export interface NativeContext {
  /**
   * Queues a generation task and returns its id at once. `onEvent` is called on the JS thread for every event.
   * Throws LLAMA_INVALID_ARGUMENT (bad params), LLAMA_EXCEED_CONTEXT (prompt does not fit a slot), LLAMA_DISPOSED.
   */
  submit(task: NativeTaskParams, onEvent: (event: NativeEvent) => void): number;
  /** Cancels a task: it ends with a `done` event, reason 'cancelled', within one decode step. Unknown ids are ignored. */
  cancel(taskId: number): void;
  stats(): NativeContextStats;
  /** Cancels every task, joins the decode thread and frees the context. Idempotent. */
  dispose(): Promise<void>;
}

/** llama.cpp quantization types accepted by quantize() (llama_ftype names without the LLAMA_FTYPE_MOSTLY_ prefix). */
export type NativeQuantType =
  | 'F32'
  | 'F16'
  | 'BF16'
  | 'Q8_0'
  | 'Q4_0'
  | 'Q4_1'
  | 'Q5_0'
  | 'Q5_1'
  | 'Q4_K_S'
  | 'Q4_K_M'
  | 'Q5_K_S'
  | 'Q5_K_M'
  | 'Q6_K'
  | 'Q3_K_M'
  | 'Q2_K';

export interface NativeQuantizeParams {
  type: NativeQuantType;
  /** Threads (default: hardware concurrency). */
  nThreads?: number;
}

/** Exports of the addon. */
export interface NativeBinding {
  Model: new (path: string, params?: NativeModelParams) => NativeModel;
  Context: new (model: NativeModel, params: NativeContextParams) => NativeContext;
  /** llama_print_system_info(): CPU features and backends compiled in. */
  systemInfo(): string;
  /** Names of the ggml backend devices available (e.g. ["CPU"], ["CUDA0", "CPU"]). */
  devices(): string[];
  /** Routes llama.cpp / ggml log lines to `fn` (level: ggml_log_level); null restores silence. */
  setLogger(fn: ((level: number, text: string) => void) | null): void;
  /** Quantizes a GGUF file with llama_model_quantize on a worker thread (rejects with LLAMA_QUANTIZE_FAILED). */
  quantize(input: string, output: string, params: NativeQuantizeParams): Promise<void>;
}
