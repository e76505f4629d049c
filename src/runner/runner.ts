import { Observable } from 'rxjs';
import type { NativeChatRender, NativeChatRequest, NativeSamplingParams } from '../../binding';
import type { RunnerWorkReport } from '../observability/tracing/runner-report';

/**
 * The runner seam (Ollama's `llm.LlamaServer`, ARCHITECTURE.md §4): one loaded model with its slots. The scheduler
 * creates runners through RUNNER_FACTORY, so tests can swap in fakes. Units: tokens, nanoseconds.
 */

/** Load-time options: a change needs a reload of the model (reference/ollama-api.md §4.1, §7.2). */
export interface LoadOptions {
  /** Context per slot, tokens (after clamping to the training context; at least 4). */
  numCtx: number;
  /** Logical batch, tokens. */
  numBatch: number;
  /** Layers on the GPU; -1 = automatic. */
  numGpu: number;
  mainGpu?: number;
  useMmap?: boolean;
  /**
   * Threads (num_thread, else LLAMAD_THREADS); 0 = automatic: the physical cores, split between the runners that
   * decode at the same time (RunnerCreateOptions.threads, Runner.setThreads).
   */
  numThread: number;
  /**
   * llama.cpp RPC workers (`host:port`) that hold the layers (beyond Ollama): Modelfile `PARAMETER rpc`, else
   * LLAMAD_RPC_SERVERS; absent = none (local only). A runner with other workers is another runner (sameSpec).
   */
  rpcServers?: string[];
  /**
   * Flash attention of the contexts (OLLAMA_FLASH_ATTENTION; llama.cpp's flash_attn_type); absent = `auto`. A runner
   * with another setting is another runner (sameSpec).
   */
  flashAttention?: 'auto' | 'on' | 'off';
  /**
   * KV cache element type of K and V (OLLAMA_KV_CACHE_TYPE after Ollama's rule, config/kvCacheSettings: a quantized
   * type only with flash attention `on`); absent = `f16`. Sizes the KV cache (f16 2 bytes per element, q8_0 34 and
   * q4_0 18 bytes per 32 elements); a runner with another type is another runner (sameSpec).
   */
  kvCacheType?: 'f16' | 'q8_0' | 'q4_0';
}

/** What a runner is loaded with; two requests share a runner only when their specs are equal. */
export interface RunnerSpec extends LoadOptions {
  /** Absolute path of the GGUF weights blob. */
  modelPath: string;
  /**
   * Slots (sequences decoded together); the KV cache holds numCtx × numParallel tokens, numCtx per slot — or, with
   * `kvUnified`, numCtx tokens that the slots share.
   */
  numParallel: number;
  /**
   * The slots share one KV cache of numCtx cells (OLLAMA_NUM_PARALLEL unset: llama-server's `-np -1` auto mode), so a
   * lone request still has its whole num_ctx; a request whose prompt does not fit the cells the others hold waits in
   * the runner's queue (binding.d.ts NativeContextParams.kvUnified). Absent/false: numCtx cells per slot.
   */
  kvUnified?: boolean;
  /**
   * Host-RAM prompt cache of the generation context, bytes (binding.d.ts NativeContextParams.cacheRamBytes): sequences
   * a slot drops for another prompt are kept in the runner's memory and restored when a prompt extends them. Requests
   * ask for their share of the daemon-wide LLAMAD_CACHE_RAM budget; the scheduler loads with what it grants
   * (scheduler/ram-cache-budget.ts). Absent/0 = off. Embedding contexts never get one. Not part of sameSpec.
   */
  cacheRamBytes?: number;
  /** Absolute path of a vision projector blob (mmproj GGUF, manifest layer `application/vnd.ollama.image.projector`). */
  projectorPath?: string;
  /**
   * LoRA adapters resident at once (LLAMAD_MAX_LORAS): requests name theirs (RunnerRequest.loras); the runner loads
   * each on first use over its base weights and unloads the least recently used idle one to make room; a request whose
   * adapter finds no room waits until one is idle. Absent = 4. Not part of sameSpec.
   */
  maxLoras?: number;
  /**
   * Absolute path of the speculative-decoding draft model blob (GGUF, manifest layer
   * `application/vnd.ollama.image.draft`); absent = none. Loaded with the model (same GPU layers and mmap settings)
   * and given to its generation context (binding.d.ts NativeContextParams.draftModel); requests then draft with it
   * (RunnerRequest.draft). A draft of another vocabulary fails the load (ModelLoadError). Part of sameSpec.
   */
  draftModelPath?: string;
}

/**
 * Speculative decoding of one request (binding.d.ts NativeDraftParams): tokens proposed per step (Ollama's
 * `draft_num_predict`) by the runner's draft model, or with `ngram` by prompt lookup in the sequence (beyond Ollama:
 * `draft_ngram`). The output is what it would be without it; only the speed differs.
 */
export interface RunnerDraft {
  /** Tokens proposed per step, 1..64 (more are capped). */
  nMax: number;
  /** N-gram lookup instead of the draft model (the only way without one). */
  ngram?: boolean;
  /**
   * Draft nMax tokens (n-gram: what the match gives, up to nMax) at every step, without the engine's cost model
   * (LLAMAD_DRAFT_FIXED; NativeDraftParams.fixed).
   */
  fixed?: boolean;
}

/**
 * Sampling parameters of one generation: exactly the addon's NativeSamplingParams (binding.d.ts), which the LlamaRunner
 * passes through unchanged; fakes read the same shape.
 */
export type RunnerSampling = NativeSamplingParams;

/** One generation request. */
export interface RunnerRequest {
  /** Prompt token ids, non-empty, shorter than the slot context. */
  tokens: number[];
  /** Tokens to generate; -1 = until end of generation or the slot is full (with `shift`: capped at 10 × numCtx). */
  numPredict: number;
  /**
   * Context shift (Ollama's `shift`, default true; reference §4.4, llama-server `--context-shift`): when the slot's
   * context (numCtx tokens) fills during generation, keep the first `numKeep` tokens (+BOS), drop half of the rest
   * and go on, so only `numPredict` ends the generation with `length`. false: end with `length` at the full context.
   * Media prompts and models whose cache cannot shift always stop at the full context.
   */
  shift?: boolean;
  /** Tokens kept at the start of the context on a shift (Ollama's `num_keep`, default 4), not counting BOS. */
  numKeep?: number;
  sampling: RunnerSampling;
  /** Stop strings; the matched one is not emitted. */
  stop: string[];
  /** Report log-probabilities: absent = none; N = the sampled token plus N alternatives (0..20) per token. */
  logprobs?: number;
  /**
   * A prompt with images (needs a runner whose spec has `projectorPath`): replaces `tokens` as the prompt (which
   * then only serve counting); `prompt` holds the media marker `<__media__>` once per image (generation/prompt/media.ts).
   * Undecodable images, or a marker/image count mismatch, are InvalidRequestError.
   */
  media?: { prompt: string; images: Uint8Array[] };
  /**
   * The longest audio clip of `media` in seconds (LLAMAD_MAX_AUDIO_SECONDS; NativeTaskParams.maxAudioSeconds); 0 or
   * absent = no bound. A longer clip is an InvalidRequestError from the engine.
   */
  maxAudioSeconds?: number;
  /**
   * Speculative decoding (absent: none). Drafting with the model (`ngram` false) needs a runner whose spec has
   * `draftModelPath`; otherwise InvalidRequestError.
   */
  draft?: RunnerDraft;
  /**
   * Cache scope (binding.d.ts NativeTaskParams.cacheScope): an opaque key of the request's principal, derived by the
   * generation layer (security/cache-scope.ts); the KV prefix and host-RAM prompt cache entries this generation
   * leaves are reused only by generations of the same scope. Carried to a runner process unchanged (protocol.ts
   * `generate`). Absent = the shared scope.
   */
  cacheScope?: string;
  /**
   * LoRA adapters of this generation (beyond Ollama: a Modelfile `ADAPTER` runs over the base model's runner, and
   * llama-server's per-request `lora`), applied with their scales to the sequence's decode steps only; absent/empty =
   * the base weights. Requests with different adapter sets run on the same runner concurrently (the engine decodes
   * each set in its own batch); their KV prefixes are never shared (the runner folds the set into the cache scope).
   * A missing or mismatched adapter file fails the request (InvalidRequestError).
   */
  loras?: RunnerLora[];
  /**
   * The W3C `traceparent` of the generation's span when the request is traced (observability/tracing): a runner
   * process then reports its side of the work with the `done` event (`runner`), which the daemon records under this
   * span. Absent = not traced; the in-process runner ignores it.
   */
  traceparent?: string;
}

/** One LoRA adapter of a request (binding.d.ts NativeLoraAdapter plus a name for the metrics). */
export interface RunnerLora {
  /** Absolute path of the adapter blob (a LoRA GGUF made for the runner's base weights). */
  path: string;
  /** Multiplier of the adapter's delta (llama-server's `scale`); 0 = not applied. */
  scale: number;
  /** The adapter's name in metrics and logs: the adapter model's name (`ft1:latest`). */
  name: string;
}

/** One token's log-probability (natural log) with its text and UTF-8 bytes (Ollama `api.TokenLogprob`). */
export interface RunnerTokenLogprob {
  /** The token's text (lossy UTF-8 decode of `bytes`). */
  token: string;
  logprob: number;
  /** The token piece's bytes (may be an incomplete UTF-8 sequence). */
  bytes: number[];
}

/** The sampled token's logprob and the most likely alternatives, most likely first (Ollama `api.Logprob`). */
export interface RunnerLogprob extends RunnerTokenLogprob {
  topLogprobs: RunnerTokenLogprob[];
}

/** Prompt/generation counts and durations of one finished generation. */
export interface RunnerTimings {
  /** Prompt tokens of the generation, reused from the KV cache or evaluated (the whole prompt). */
  promptEvalCount: number;
  /** Of those, tokens reused from the slot's KV cache (prefix reuse) rather than evaluated. */
  promptCachedCount: number;
  promptEvalDurationNs: number;
  /** Tokens generated. */
  evalCount: number;
  evalDurationNs: number;
  /** The runner's slot (0-based) that ran the generation, when the runner reports it (traces: `llamad.slot`). */
  slot?: number;
}

/**
 * Events of one generation, in order: `token` zero or more times, then one `done` (the Observable then completes).
 * `text` may be '' while the runner holds back an incomplete UTF-8 sequence or a possible stop string.
 * Errors arrive as Observable errors (domain errors); a cancelled generation never emits `done`.
 */
export type RunnerEvent =
  | { kind: 'token'; text: string; token: number; logprob?: RunnerLogprob }
  | {
      kind: 'done';
      reason: 'stop' | 'length';
      /** The stop string that matched, when generation ended on one. */
      stopString?: string;
      timings: RunnerTimings;
      /** A runner process's report of its side of a traced generation (RunnerRequest.traceparent set). */
      runner?: RunnerWorkReport;
    };

/** A chat message for the model's own chat template. */
export interface RunnerChatMessage {
  role: string;
  content: string;
}

/** Facts about the loaded model the prompt builder needs. */
export interface RunnerModelInfo {
  /** Training context, tokens. */
  trainContext: number;
  /** Whether tokenize(addSpecial) prepends BOS, and its id (-1 when none). */
  addBos: boolean;
  bos: number;
  /** Whether tokenize(addSpecial) appends EOS, and its id (-1 when none); absent in fakes. */
  addEos?: boolean;
  eos?: number;
  /** Whether the GGUF carries a chat template. */
  hasChatTemplate: boolean;
  /** Whether the model is an embedding model (GGUF `<arch>.pooling_type`): its context only embeds. */
  embeddingModel?: boolean;
  /**
   * A reranker: GGUF `<arch>.pooling_type` 4 (llama_pooling_type RANK). embed() then gives the classifier's scores
   * (n_cls_out floats per input, the first is the relevance score) instead of a vector.
   */
  reranker?: boolean;
  /** GGUF `tokenizer.chat_template.rerank` (`{query}`, `{document}` placeholders), when the model has one. */
  rerankTemplate?: string;
  /**
   * The context's flash attention as created (NativeContextStats.flashAttn): OLLAMA_FLASH_ATTENTION unset (`auto`)
   * is `off` on the CPU (binding.d.ts NativeContextParams.flashAttn); absent in fakes.
   */
  flashAttention?: 'auto' | 'on' | 'off';
}

/** A chat render request for the model's Jinja template (binding.d.ts NativeChatRequest). */
export type RunnerChatRequest = NativeChatRequest;
/** What renderChat returns: prompt, grammar, triggers, stops, thinking flag and an output parser. */
export type RunnerChatRender = NativeChatRender;

/** A runner's load right now (metrics gauges, read at scrape time). */
export interface RunnerUsage {
  /** Slots decoding a generation. */
  slotsBusy: number;
  /** Generations waiting for a free slot. */
  queuedTasks: number;
  /** KV cache size, cells (tokens over all slots). */
  kvCellsTotal: number;
  /** KV cells held by the generations in flight: their prompt tokens plus the tokens generated so far. */
  kvCellsUsed: number;
  /** Of the busy slots, those waiting for KV cells of a shared cache (paused; absent: none or unknown). */
  slotsWaiting?: number;
  /** Threads of the runner's next decode (absent: unknown). */
  threads?: number;
  /**
   * Host-RAM prompt cache (RunnerSpec.cacheRamBytes; absent: off or unknown): sequences and bytes it keeps now; since
   * the load, prompts restored from it and the prompt tokens those restores spared evaluating.
   */
  ramCache?: { entries: number; bytes: number; hits: number; tokens: number };
  /** Speculative decoding since the load: tokens drafted and verified, and of those the accepted ones. */
  draftTokens?: number;
  draftAccepted?: number;
  /**
   * llama_decode calls of generation steps since the load (the engine's progress counter: the runner process's
   * heartbeat carries it to the daemon's watchdog); absent: unknown.
   */
  decodeSteps?: number;
  /**
   * LoRA adapters (RunnerRequest.loras; absent: the runner has none or does not say): the most resident at once
   * (RunnerSpec.maxLoras) and adapter names — resident now, used by generations running now, and wanted by generations
   * waiting for a slot or for room to load their adapter. For the inference gateway's `lora_requests_info` gauge.
   */
  loras?: { max: number; resident: string[]; running: string[]; waiting: string[] };
}

/**
 * Where a runner's memory lives, from the backend's real buffer sizes (llama.cpp llama_get_memory_breakdown): weights
 * once, plus the KV cache and compute buffers of each of its contexts. Bytes.
 */
export interface RunnerMemory {
  /** Everything: system RAM, device memory and what RPC workers hold. */
  totalBytes: number;
  /**
   * The part in this machine's device memory (VRAM): Ollama's `size_vram` (§3.7). 0 on a CPU build. RPC workers'
   * bytes are not counted: they are not on this machine, and ggml does not say whether a worker keeps them in RAM or
   * VRAM.
   */
  vramBytes: number;
  /**
   * Bytes per device, largest first: 'CPU' (all host buffers), local devices ('CUDA0', …), and one entry per RPC
   * worker device named by its buffer type, 'RPC<i>[host:port]' (`endpoint` set).
   */
  devices: { name: string; bytes: number; endpoint?: string }[];
}

/** How a runner died on its own (its process ended): the message reason and a low-cardinality cause. */
export interface RunnerDeath {
  /** Ollama's reason text: the runner's last meaningful stderr line, else `exit status N` / `signal: aborted`. */
  reason: string;
  /**
   * For the crash metric: 'abort' (SIGABRT, GGML_ASSERT), 'signal', 'exit' (an exit status), 'oom', 'hang' (killed by
   * the daemon's watchdog: no engine progress with requests in flight).
   */
  cause: 'abort' | 'signal' | 'exit' | 'oom' | 'hang';
}

export interface Runner {
  /** The spec it was loaded with, as given to RunnerFactory.create (the scheduler reads its cacheRamBytes grant). */
  readonly spec: RunnerSpec;
  /**
   * Why the runner can no longer serve (an RPC worker's connection broke, its process died), else undefined. The
   * scheduler unloads a broken runner as soon as it is idle instead of keeping it alive. Optional: fakes need not
   * implement it.
   */
  broken?(): string | undefined;
  /**
   * Registers `listener`, called once when the runner dies on its own (a runner process ended: abort, signal, OOM
   * kill, exit) — not on close(). Every request in flight on it has then failed with RunnerTerminatedError; the
   * scheduler drops the runner at once (its memory is released) so that the next request loads it afresh.
   * Optional: in-process runners never report it.
   */
  onDeath?(listener: (death: RunnerDeath) => void): void;
  readonly info: RunnerModelInfo;
  /** Context of one slot, tokens (a prompt must be shorter than this). */
  readonly slotContext: number;
  /**
   * Starts a generation when subscribed; unsubscribing cancels it (the slot is freed within one decode step).
   * Errors: ContextLengthExceededError, InvalidRequestError, InternalError (domain errors).
   */
  generate(request: RunnerRequest): Observable<RunnerEvent>;
  /**
   * Tokenizes text; `parseSpecial` turns control-token text (`<|im_start|>`) into control tokens. Asynchronous: a
   * large text is tokenized off the JS thread (the addon's libuv pool) so that other streams keep flowing.
   * Rejects with InternalError / InvalidRequestError (domain errors).
   */
  tokenize(text: string, options: { addSpecial: boolean; parseSpecial: boolean }): Promise<number[]>;
  /** Text of token ids (special tokens rendered as text), computed off the JS thread. Rejects with domain errors. */
  detokenize(tokens: number[]): Promise<string>;
  /**
   * Renders messages with the model's GGUF (Jinja) chat template, off the JS thread.
   * Rejects with InvalidRequestError `template error: …` when the template rejects the conversation.
   */
  applyChatTemplate(messages: RunnerChatMessage[], options: { addGenerationPrompt: boolean }): Promise<string>;
  /**
   * Renders a chat with the GGUF Jinja template through llama.cpp common/chat (native mode, §8.1): tools, thinking and
   * a JSON schema; resolves with the prompt plus grammar/triggers/stops and a parser for the output. The rendering
   * (Jinja, grammar generation) runs off the JS thread. Rejects with InvalidRequestError `template error: …`.
   */
  renderChat(request: RunnerChatRequest): Promise<RunnerChatRender>;
  /** What the GGUF Jinja template supports (tool calls, thinking); all false without a template. */
  chatCapabilities(): { tools: boolean; thinking: boolean };
  /**
   * A GBNF grammar for a JSON Schema (JSON text), llama.cpp json_schema_to_grammar, converted off the daemon's JS
   * thread (a worker thread of the addon, grammar-worker.ts; in the runner process for a ProcessRunner). `signal`
   * drops a conversion that has not started yet (RequestCancelledError). The caller bounds the schema sizes (the
   * prompt stage's per-request grammar budget).
   * Rejects with InvalidRequestError when the schema cannot be converted.
   */
  jsonSchemaToGrammar(schema: string, signal?: AbortSignal): Promise<string>;
  /**
   * Embeds inputs (token ids, each non-empty and at most `slotContext` tokens) in ONE engine call, which batches
   * them; returns one pooled vector per input, in order, NOT normalized. A generation model gets a separate embedding
   * context on first use (mean pooling unless the GGUF says otherwise).
   * `signal` (e.g. the HTTP request's, aborted when the client goes away) cancels the job: the engine stops before
   * its next batch or aborts the running one, and the promise rejects with RequestCancelledError.
   * @throws ContextLengthExceededError, InvalidRequestError, InternalError, RequestCancelledError.
   */
  embed(inputs: number[][], signal?: AbortSignal): Promise<Float32Array[]>;
  /** Cancels running generations and frees the model (and its contexts). Idempotent. */
  close(): Promise<void>;
  /** The runner process's OS process id (the process runner; absent for a runner inside the daemon's process). */
  readonly pid?: number;
  /** Slots and KV cells in use (optional: fakes may leave it out; the scheduler then estimates from requests). */
  usage?(): RunnerUsage;
  /** Measured memory (optional: without it /api/ps shows the scheduler's estimate and `size_vram` 0). */
  memory?(): RunnerMemory;
  /**
   * Threads of the following decodes (the scheduler's split of the CPU cores between runners decoding at the same
   * time); a runner loaded with an explicit numThread ignores it. Optional: fakes may leave it out.
   */
  setThreads?(threads: number): void;
}

/** What the scheduler tells a factory about a load besides the spec (labels only; never part of the spec). */
export interface RunnerCreateOptions {
  /** The model's short name (`tiny:latest`) the load is for, for log labels. */
  modelName?: string;
  /** Threads to start with when spec.numThread is 0 (the scheduler's share of the cores; absent: all of them). */
  threads?: number;
  /**
   * Load progress in [0, 1] (llama.cpp's load progress callback; from a runner process at most once per 1 %), called
   * on the JS thread while the load runs. A retried load (the SIGILL rule) starts again from 0.
   */
  onProgress?: (progress: number) => void;
}

/**
 * Creates (loads) runners. Rejects with ModelLoadError / InsufficientMemoryError, and RunnerTerminatedError when a
 * runner process died while loading (or its model is in crash-loop back-off).
 */
export interface RunnerFactory {
  create(spec: RunnerSpec, options?: RunnerCreateOptions): Promise<Runner>;
}

/** DI token of the RunnerFactory (Ollama's `newServerFn`): LlamaRunnerFactory in production, fakes in tests. */
export const RUNNER_FACTORY = Symbol('RUNNER_FACTORY');
