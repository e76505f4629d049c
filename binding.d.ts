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
  /**
   * Let the CPU backend place weights in its extra buffer types (llama_model_params.use_extra_bufts; default true):
   * AMX tiles and repacked Q4_0/Q8_0 layouts. false keeps plain CPU buffers: slower prompt processing, but no AMX or
   * repack kernel runs (the daemon's retry after a runner died of SIGILL while loading; docs/native.md "CPU probe").
   */
  useExtraBufferTypes?: boolean;
  /**
   * llama.cpp RPC workers (`rpc-server`, `llamad rpc-worker`) that hold layers of this model, "host:port" each (IPv4
   * address or host name; at most 16, no duplicates, else LLAMA_INVALID_ARGUMENT at construction). Their devices
   * come first in llama_model_params.devices, then the local GPUs (as llama-server's `--rpc`); `nGpuLayers` then
   * counts the layers given to all of them (default: all). Only this model uses them (they are not registered
   * process-wide). load() first probes each worker (TCP connect and the RPC HELLO, 5 s) and rejects with
   * LLAMA_MODEL_LOAD_FAILED "rpc server HOST:PORT unreachable: REASON" instead of letting ggml abort the process; a
   * worker already held by a loaded model of this process is not probed (rpc-server serves one client at a time).
   * A worker whose connection breaks while the model is in use fails the running tasks and every later decode with
   * LLAMA_DECODE_FAILED "rpc server HOST:PORT: connection lost" (vendor patch 0001; unpatched ggml-rpc aborts the
   * process); dispose the model and load it again (docs/native.md "RPC").
   */
  rpcServers?: string[];
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

/** A message for renderChat: the OpenAI-style message common/chat takes. */
export interface NativeChatRequestMessage {
  role: string;
  content: string;
  /** Assistant reasoning (thinking) text of an earlier turn. */
  reasoningContent?: string;
  /** Tool calls of an assistant turn; arguments as JSON text. */
  toolCalls?: { id?: string; name: string; arguments: string }[];
  /** On role 'tool': the tool's name and the call it answers. */
  toolName?: string;
  toolCallId?: string;
}

/** A tool for renderChat: a function with a JSON Schema of its parameters (JSON text). */
export interface NativeChatTool {
  name: string;
  description: string;
  parameters: string;
}

export interface NativeChatRequest {
  messages: NativeChatRequestMessage[];
  tools?: NativeChatTool[];
  /** 'auto' (default), 'none', 'required'. */
  toolChoice?: 'auto' | 'none' | 'required';
  /** JSON Schema (JSON text) the answer must follow; turned into a grammar. */
  jsonSchema?: string;
  /**
   * Enable the template's thinking mode (default false). Reasoning blocks are parsed out of the output into
   * reasoningContent either way (an empty block the template adds when thinking is off never reaches content).
   */
  enableThinking?: boolean;
  /** Extra variables for the template (chat_template_kwargs), values as JSON text. */
  templateKwargs?: Record<string, string>;
  addGenerationPrompt?: boolean;
  /** Template text to use instead of the model's tokenizer.chat_template. */
  template?: string;
}

export interface NativeChatRender {
  prompt: string;
  /** common_chat_format name (e.g. 'Content-only', 'Hermes 2 Pro', 'peg-native'). */
  format: string;
  /** GBNF grammar ('' for none) and how to apply it. */
  grammar: string;
  grammarLazy: boolean;
  grammarTriggers: NativeGrammarTrigger[];
  preservedTokens: string[];
  additionalStops: string[];
  /** Whether this render has thinking on (the output may start with reasoning). */
  thinking: boolean;
  /** Text at the end of `prompt` that the grammar starts with: pass it as sampling.grammarPrefill with `grammar`. */
  generationPrompt: string;
  /** Parses the model's raw output text for this render (content, reasoning, tool calls). */
  parser: NativeChatParser;
}

/** Result of NativeChatParser.parse. */
export interface NativeChatParsed {
  content: string;
  reasoningContent: string;
  /** `id` is '' when the model's format has no call ids (the caller assigns one). */
  toolCalls: { id: string; name: string; arguments: string }[];
}

/**
 * NativeChatParser.parseStep's result: parse(text, true) and where that parse stopped for want of input (native/
 * chat_parse_step.h ChatFrontier): 0 elsewhere (or unknown), 1 inside a content region and 2 inside a reasoning
 * region that next characters starting none of stepDelimiters() extend by exactly those characters, 3 inside a JSON
 * string of a tool call's arguments (next characters that neither close it nor break an escape change no content or
 * reasoning).
 */
export interface NativeChatStep extends NativeChatParsed {
  frontier: 0 | 1 | 2 | 3;
}

/** Output parser bound to one NativeChatRender (common_chat_parse with that render's format and parser). */
export interface NativeChatParser {
  /** Parses the whole output so far; `isPartial` while generation continues (incomplete tool calls are withheld). */
  parse(text: string, isPartial: boolean): NativeChatParsed;
  /** parse(text, true) (same result, same fallbacks) plus the parse's frontier, for streaming without re-parsing. */
  parseStep(text: string): NativeChatStep;
  /** The delimiters (UTF-8 text) that end the content and reasoning regions of frontiers 1 and 2. */
  stepDelimiters(): string[];
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
  /**
   * Renders a chat with the model's Jinja template through common_chat_templates_apply, with tools, thinking and a
   * JSON schema, and returns the prompt plus what generation and output parsing need (grammar for tool calls or the
   * schema, triggers, extra stops, and a parser for the output). Throws LLAMA_TEMPLATE_FAILED / LLAMA_INVALID_ARGUMENT.
   */
  renderChat(request: NativeChatRequest): NativeChatRender;
  /** What the Jinja template supports (common_chat_templates caps): tool calls and thinking. */
  chatCapabilities(template?: string): { tools: boolean; thinking: boolean };
  /**
   * Tokenizes UTF-8 text on the JS thread. `addSpecial` adds BOS/EOS as the vocab says; `parseSpecial` parses control
   * tokens in text. Request paths use tokenizeAsync.
   */
  tokenize(text: string, addSpecial: boolean, parseSpecial: boolean): Int32Array;
  /** Detokenizes token ids on the JS thread; `removeSpecial` drops BOS/EOS, `unparseSpecial` renders control tokens as text. */
  detokenize(tokens: Int32Array, removeSpecial?: boolean, unparseSpecial?: boolean): string;
  /**
   * tokenize() on the libuv thread pool: the same result, without blocking the JS thread (the text is copied first).
   * Rejects (never throws) with the errors tokenize() throws, LLAMA_DISPOSED / LLAMA_INVALID_ARGUMENT when the model
   * is disposed / not loaded. dispose() frees the model only after the call settled.
   */
  tokenizeAsync(text: string, addSpecial: boolean, parseSpecial: boolean): Promise<Int32Array>;
  /** detokenize() on the libuv thread pool (ids are range-checked first, on the JS thread); rejects like tokenizeAsync. */
  detokenizeAsync(tokens: Int32Array, removeSpecial?: boolean, unparseSpecial?: boolean): Promise<string>;
  /** applyChatTemplate() on the libuv thread pool (template parse and Jinja rendering); rejects like tokenizeAsync. */
  applyChatTemplateAsync(messages: NativeChatMessage[], options?: NativeChatTemplateOptions): Promise<string>;
  /**
   * renderChat() on the libuv thread pool (Jinja rendering, grammar generation); the request is read on the JS
   * thread first, its argument errors reject. The model's parsed templates are shared (cached per template) by both.
   */
  renderChatAsync(request: NativeChatRequest): Promise<NativeChatRender>;
  /**
   * Loads the LoRA adapter at `path` over this model's weights (llama_adapter_lora_init) on the libuv pool; resolves
   * once tasks may name it (NativeTaskParams.loras). Loading a loaded path resolves at once. A missing file, a GGUF
   * that is not a LoRA adapter, another architecture or tensor shapes that do not match the model reject with
   * LLAMA_MODEL_LOAD_FAILED naming the path. Adapters stay loaded until unloadLora or dispose().
   */
  loadLora(path: string): Promise<void>;
  /**
   * Frees the adapter at `path` on the libuv pool, once no queued or running task names it and no engine has it set
   * (it waits up to 2 s for them): `'unloaded'`; `'absent'` when it was not loaded; `'busy'` when it is still held
   * (it stays loaded).
   */
  unloadLora(path: string): Promise<'unloaded' | 'absent' | 'busy'>;
  /** Paths of the loaded LoRA adapters. */
  loras(): string[];
  /** Frees the model after every context created from it was disposed. Idempotent. */
  dispose(): Promise<void>;
}

/** Parameters of `new Context(model, params)`. */
export interface NativeContextParams {
  /**
   * Total KV cache size in tokens over all slots (llama n_ctx); each slot gets nCtx / nParallel, or with `kvUnified`
   * the slots share all nCtx cells.
   */
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
  /**
   * Size of the CPU thread pools: the most threads setThreads() may ask for later (default: the larger of nThreads
   * and nThreadsBatch).
   */
  nThreadsMax?: number;
  /**
   * One KV cache stream shared by all slots (llama `kv_unified`, llama-server's `-np -1` auto mode): any slot may use
   * all nCtx cells, and the engine shares them out — a task starts when its prompt fits the cells the running tasks
   * do not hold; a running task short of cells takes them from the most recently started one, which pauses (keeps its
   * output, loses its KV) and is resumed by re-evaluating its tokens; the oldest task is never paused
   * (docs/native.md "Parallel slots"). On an embedding context (always one stream, cleared per batch) it lets an
   * input use all nCtx tokens. Default false: nCtx / nParallel cells per slot.
   */
  kvUnified?: boolean;
  /**
   * Host-RAM prompt cache budget, bytes (default 0 = off; ignored by embedding contexts): when a slot drops the KV of
   * a sequence of at least 64 tokens for another prompt, its state is copied into process memory (least recently used
   * entries out first, at most this many bytes in all) and copied back into a slot when a later prompt extends it by
   * more than the slot's own prefix (docs/native.md "Host-RAM prompt cache"). Image prompts are never kept.
   */
  cacheRamBytes?: number;
  /**
   * Flash attention: 'auto' (default), 'on', 'off'. For a generation context with an f16 KV cache whose model runs
   * on the CPU alone (no RPC worker; nGpuLayers 0 or no GPU device), 'auto' is 'on' when the model's attention is
   * grouped-query (2–16 q heads per K/V head: ggml-cpu takes a group as one tile, vendor patch 0003) and 'off'
   * otherwise (per row, ggml's CPU flash attention costs a batch of n tokens about n times one token, and one token
   * more than the plain attention at a long context; docs/native.md "Flash attention and KV cache type"). Otherwise
   * llama.cpp decides. `stats().flashAttn` says what the context got.
   */
  flashAttn?: 'auto' | 'on' | 'off';
  /** Embedding context (llama `embeddings`): only embed() is allowed on it, submit() throws LLAMA_INVALID_ARGUMENT. */
  embeddings?: boolean;
  /** Pooling of an embedding context; default: the model's own (`<arch>.pooling_type`), 'mean' when it has none. */
  poolingType?: 'none' | 'mean' | 'cls' | 'last' | 'rank';
  /** KV cache element type: 'f16' (default), 'q8_0', 'q4_0'. */
  typeK?: string;
  typeV?: string;
  /**
   * Vision projector (an "mmproj" GGUF made for this model, e.g. an Ollama `application/vnd.ollama.image.projector`
   * layer): loaded with mtmd_init_from_file while the context is created (on the JS thread by `new Context`, on the
   * libuv pool by `Context.create`), freed with the context.
   * Enables `images` in tasks. A missing or mismatched file (its output width must equal the model's n_embd) throws
   * LLAMA_MODEL_LOAD_FAILED.
   */
  projectorPath?: string;
  /**
   * A draft model for speculative decoding (tasks' `draft`; e.g. Ollama's `application/vnd.ollama.image.draft` layer):
   * a loaded Model with the same vocabulary (type, size, BOS/EOS and every token's text; else LLAMA_MODEL_LOAD_FAILED).
   * The context creates a second llama_context on it with the same parameters and one unified KV stream of nCtx +
   * 65 × nParallel cells, run by the same decode thread; it keeps the draft model alive, and disposing the draft model
   * disposes this context. Not for embedding contexts (LLAMA_INVALID_ARGUMENT).
   */
  draftModel?: NativeModel;
}

/** One LoRA adapter of a task (NativeTaskParams.loras). */
export interface NativeLoraAdapter {
  /** Path of a LoRA GGUF loaded over the context's model (NativeModel.loadLora). */
  path: string;
  /** Multiplier of the adapter's delta (`scale × alpha / rank × B·A`); default 1, 0 disables it, finite. */
  scale?: number;
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
  /** Apply the grammar only once a trigger matched (tool calls, from NativeChatRender); default false. */
  grammarLazy?: boolean;
  /** Triggers of a lazy grammar, as common_grammar_trigger. */
  grammarTriggers?: NativeGrammarTrigger[];
  /** Control tokens the grammar may produce as text (NativeChatRender.preservedTokens). */
  preservedTokens?: string[];
  /**
   * Text the prompt already ends with that a non-lazy grammar must consume first (NativeChatRender.generationPrompt
   * for the render's own grammar; leave it out for user grammars). Ignored for lazy grammars. A grammar that rejects
   * it throws LLAMA_INVALID_ARGUMENT at submit.
   */
  grammarPrefill?: string;
}

/** A trigger of a lazy grammar (common_grammar_trigger): a literal word, a regex on the output, or a token. */
export interface NativeGrammarTrigger {
  type: 'word' | 'pattern' | 'pattern_full' | 'token';
  value: string;
  /** Token id, for type 'token'. */
  token?: number;
}

/** One generation request for a slot. */
export interface NativeTaskParams {
  /** Prompt token ids (non-empty). Ignored when `images` is given (pass an empty Int32Array). */
  tokens: Int32Array;
  /**
   * Images and audio clips (needs a context with `projectorPath`): encoded files, one per media marker in `prompt`, in
   * order. Each entry is sniffed: RIFF..WAVE, an ID3 tag or MPEG frame sync (MP3) and fLaC are audio, decoded by
   * miniaudio to mono float PCM at the projector's sample rate (16 kHz for Whisper-type encoders; it needs a projector
   * with an audio encoder); anything else is an image (PNG, JPEG, BMP, GIF, ... decoded by stb_image through
   * mtmd_helper_bitmap_init_from_buf). With `images` the prompt is given as TEXT in `prompt` instead of `tokens`; it is
   * tokenized by mtmd_tokenize (add BOS as the vocabulary says, control tokens parsed) and each file becomes the
   * projector's tokens (tiny-mmproj: 4 per image; Whisper-type audio encoders: one chunk per started 30 s).
   * The task takes the idle slot whose sequence starts with the longest part of its prompt: equal text tokens and the
   * same files (by content hash, sha256) at the same positions, within its cacheScope; that prefix is not evaluated
   * again. `timings.promptTotal` counts text plus media positions, `promptN` those evaluated. The rest is evaluated
   * one unit per engine step (a text batch, one image or audio chunk encode, or one batch of its embeddings), between
   * the other slots' steps, so a long clip holds other streams up for one unit at a time.
   * Throws LLAMA_INVALID_ARGUMENT at submit when the context has no projector (message `submit: images need a context
   * created with a projector (params.projectorPath)`, or `submit: this model is missing data required for audio
   * input` when an entry is audio). Its `error` event is LLAMA_INVALID_ARGUMENT when an image cannot be decoded
   * (`images[<i>] is not a decodable image (PNG, JPEG, BMP, GIF, ...)`) or the projector has no vision encoder (`this
   * model is missing data required for image input`), an audio entry cannot be decoded (`images[<i>] is not a
   * decodable audio file (WAV, MP3 or FLAC)`), holds no sample (`audio file is empty`), is longer than
   * `maxAudioSeconds` (`audio is <d> s long; the limit is <m> s (LLAMAD_MAX_AUDIO_SECONDS)`, seconds with at most one
   * decimal) or the projector has no audio encoder (`this model is missing data required for audio input`), the
   * marker count differs from the file count, or the prompt does not end with text after its last file;
   * LLAMA_EXCEED_CONTEXT when text plus media exceed the slot.
   */
  images?: Uint8Array[];
  /** With `images`: the prompt text, containing the media marker '<__media__>' (mtmd_default_marker) once per image. */
  prompt?: string;
  /**
   * Longest audio clip accepted in `images`, seconds (the daemon's LLAMAD_MAX_AUDIO_SECONDS); absent or 0 = no bound.
   * A clip whose header gives a longer length is refused before its samples are allocated (one without a length as
   * soon as its decoded samples pass the bound). Throws LLAMA_INVALID_ARGUMENT at submit when negative or not finite.
   */
  maxAudioSeconds?: number;
  /**
   * Maximum tokens to generate; -1 = until EOG or the slot's context is full (with `contextShift`: until EOG, capped at
   * 10 × the slot context, Ollama's safety cap; the task then ends with 'length').
   */
  nPredict: number;
  sampling: NativeSamplingParams;
  /** Stop strings: generation ends when the output contains one; it is not emitted. */
  stop?: string[];
  /** Ignore end-of-generation tokens (benchmarks). */
  ignoreEos?: boolean;
  /**
   * Context shift (Ollama reference §4.4; llama-server `--context-shift`). Default false: a task whose slot context
   * is full ends with 'length'. True: when the slot holds its full context (tokens) during generation, the first
   * `nKeep` tokens (plus a BOS the prompt starts with) stay, half of the rest is dropped from the KV cache, the tail is
   * moved down (llama_memory_seq_rm / seq_add) and generation goes on; `nPredict` (or the 10 × slot-context cap)
   * ends it. Has no effect, i.e. 'length' at the full context as without it, for media tasks (`images`) and for
   * contexts whose memory cannot shift (llama_memory_can_shift false: M-RoPE, an SWA cache smaller than the context; or
   * a refused partial llama_memory_seq_rm: recurrent and hybrid models).
   * Timings are unaffected: `predictedN` counts every generated token.
   */
  contextShift?: boolean;
  /**
   * With `contextShift`: tokens kept at the start of the sequence on a shift (Ollama's `num_keep`, default 4), not
   * counting a BOS the prompt starts with; -1 = the whole prompt (llama-server `n_keep` -1). Clamped to the slot
   * context − 4 so that every shift frees room.
   */
  nKeep?: number;
  /**
   * Report log-probabilities: absent = none; N >= 0 = the sampled token's logprob plus the N most likely alternatives
   * (0..20) on every token event. Computed from the model's raw distribution (softmax of the logits), as llama-server
   * reports `n_probs` with post_sampling_probs off.
   */
  logprobs?: number;
  /**
   * Speculative decoding: each step proposes up to `nMax` tokens after the sampled one (0 = none; at most 64), decodes
   * them with it in one batch and keeps those the target samples too, so the output is what it would be without them
   * (greedy: identical; sampled: the same distribution). The proposals come from the context's draft model
   * (params.draftModel, greedy), or with `ngram` from the sequence itself: what followed the longest earlier
   * occurrence (2 to 16 tokens) of its last tokens, prompt and output (prompt lookup; llama-server `--spec-type
   * ngram-simple`). How many are proposed each step the engine's cost model decides from the measured step times and
   * the task's acceptance (none while drafting would not pay; docs/native.md "Speculative decoding"). Ignored for media
   * tasks. Throws LLAMA_INVALID_ARGUMENT at submit when `ngram` is false and the context has no draft model.
   * `done.timings.draftN` / `draftAcceptedN` count the proposals and the accepted ones.
   */
  draft?: NativeDraftParams;
  /**
   * Cache scope of the task (at most 256 bytes; absent = '', the shared scope): an opaque key of who sent it (the
   * daemon passes a hash of the request's principal under LLAMAD_CACHE_SCOPE=principal; never a secret). The KV
   * prefix a slot keeps after a task, and the host-RAM prompt cache entry it may become, are reused only by tasks of
   * the same scope: for a task of another scope they count as no prefix (the slot's cache is dropped when it is
   * taken), so `timings.promptN` and the prompt time never reveal what another scope's prompts held. Throws
   * LLAMA_INVALID_ARGUMENT when not a string or too long.
   */
  cacheScope?: string;
  /**
   * LoRA adapters of this task (absent/empty: the base weights), each loaded beforehand with NativeModel.loadLora
   * (else LLAMA_INVALID_ARGUMENT `LoRA adapter <path> is not loaded`); at most 64; a zero scale leaves one out. The
   * engine sets a task's adapters on the context (llama_set_adapters_lora) for the decode steps of its sequence: tasks
   * with the same set (same paths and scales) share a batch, tasks with different sets are decoded in turn, one set
   * per step. The KV a task leaves is not tied to its set: give tasks of different sets different cacheScopes so that
   * one never reuses another's prefix.
   */
  loras?: NativeLoraAdapter[];
}

/** Speculative decoding of one task (NativeTaskParams.draft). */
export interface NativeDraftParams {
  /** Most tokens proposed per step (Ollama's `draft_num_predict`); 0 = no speculation; capped at 64. */
  nMax: number;
  /** Propose by n-gram lookup in the sequence instead of with the draft model (default false). */
  ngram?: boolean;
  /**
   * Always propose as many tokens as there are (up to nMax), without the cost model (default false): for tests and
   * measurements of the mechanism itself; it can make decoding slower than without speculation.
   */
  fixed?: boolean;
}

/** One alternative at a position, for logprobs. */
export interface NativeTokenLogprob {
  token: number;
  /** The token's piece as UTF-8 bytes (may be an incomplete UTF-8 sequence). */
  bytes: Uint8Array;
  /** Natural-log probability. */
  logprob: number;
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
  /** Speculative decoding (task.draft), present once a token was drafted: tokens proposed and verified. */
  draftN?: number;
  /** Of `draftN`, the tokens the model sampled too (each saved a decode step). */
  draftAcceptedN?: number;
  /** The slot (0-based, its KV sequence id) that ran the task; absent when it never got one. */
  slot?: number;
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
      /** With task.logprobs: the sampled token's piece bytes and logprob, and the top alternatives, most likely first. */
      bytes?: Uint8Array;
      logprob?: number;
      topLogprobs?: NativeTokenLogprob[];
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
  /** Tasks waiting for a free slot, including media tasks whose images are still being prepared. */
  queuedTasks: number;
  /** embed() jobs queued or running (embedding contexts). */
  embedJobs: number;
  /** llama_decode calls of generation steps so far. */
  decodeSteps: number;
  /**
   * Compute graphs llama.cpp reused from the previous ubatch instead of rebuilding (llama_perf_context n_reused): a
   * steady set of generating slots reuses one graph per step.
   */
  graphsReused: number;
  /** Bytes of the KV cache. */
  kvSize: number;
  /** Whether the slots share one KV stream (params.kvUnified). */
  kvUnified: boolean;
  /** KV cells held by the tasks in the slots (their prompt and generated tokens), after the last decode step. */
  kvCellsUsed: number;
  /** KV cells idle slots keep for prefix reuse (dropped first when a shared cache runs short). */
  kvCellsCached: number;
  /** Slots whose task waits for KV cells (shared cache only; counted in activeSlots). */
  pausedSlots: number;
  /** Sequences kept in the host-RAM prompt cache (params.cacheRamBytes). */
  ramCacheEntries: number;
  /** Bytes of sequence state the host-RAM prompt cache holds. */
  ramCacheBytes: number;
  /** Prompts that started from a sequence restored from the host-RAM prompt cache, since the context was created. */
  ramCacheHits: number;
  /** Prompt tokens those restores spared evaluating (the restored prefixes), since the context was created. */
  ramCacheTokens: number;
  /** Threads of the next generation decode (setThreads). */
  nThreads: number;
  /** The context's flash attention as created: params.flashAttn, with 'auto' resolved to 'on' or 'off' on the CPU. */
  flashAttn: 'auto' | 'on' | 'off';
  /** Speculative decoding since creation: tokens drafted and verified, and of those the accepted ones. */
  draftTokens: number;
  draftAccepted: number;
  /**
   * Whether the context's projector (params.projectorPath) has a vision encoder / an audio encoder
   * (mtmd_support_vision / mtmd_support_audio): which `images` entries it accepts. False without a projector. Absent
   * from addons built before they existed.
   */
  projectorVision?: boolean;
  projectorAudio?: boolean;
}

/**
 * One ggml buffer type of a context (llama.cpp llama_get_memory_breakdown): the real sizes of the backend buffers,
 * bytes, read when the context was created.
 */
export interface NativeMemoryEntry {
  /** ggml buffer type: 'CPU', 'CPU_Mapped' (mmap'd weights), 'CUDA0', 'CUDA_Host', 'Vulkan0', 'RPC0[host:port]', … */
  buffer: string;
  /** The device of the buffer type ('CPU', 'CUDA0', …); '' when ggml names none. */
  device: string;
  /**
   * Whether the bytes are in system RAM (ggml_backend_buft_is_host); false: device memory (VRAM), or a RPC worker's
   * memory (see `endpoint`).
   */
  host: boolean;
  /**
   * For a buffer on a RPC worker (buffer 'RPC0[127.0.0.1:50052]', device 'RPC<n>'): the worker's "host:port";
   * '' (or absent) for local buffers. The bytes live on that machine (its RAM or VRAM: ggml does not say which).
   */
  endpoint?: string;
  /**
   * ggml_backend_dev_type of the device: 'cpu' (the CPU, including its extra buffer types CPU_REPACK, AMX, …, whose
   * `host` is false although the bytes are in system RAM), 'gpu', 'igpu', 'accel' (BLAS, …), 'meta' (several devices
   * for tensor parallelism); '' when the buffer type names no device. Absent from addons built before it existed.
   */
  deviceType?: '' | 'cpu' | 'gpu' | 'igpu' | 'accel' | 'meta';
  /** Model weights, bytes (shared by every context of the model). */
  model: number;
  /** Context state (KV cache), bytes. */
  context: number;
  /** Compute buffers, bytes. */
  compute: number;
}

/**
 * A llama_context with its own decode thread and `nParallel` slots; every active slot is batched into one
 * llama_decode per step (continuous batching). Tasks beyond the free slots wait in a FIFO queue.
 */
export interface NativeContext {
  /**
   * Queues a generation task and returns its id at once. `onEvent` is called on the JS thread for every event.
   * Throws LLAMA_INVALID_ARGUMENT (bad params, images on a context without projector), LLAMA_EXCEED_CONTEXT (prompt
   * does not fit a slot), LLAMA_DISPOSED. A task with `images` is prepared (images and audio decoded, prompt tokenized
   * by mtmd) on the context's media thread, off the JS thread: its preparation errors arrive as its `error` event
   * (LLAMA_INVALID_ARGUMENT: undecodable image or audio, empty or too long audio, a file kind the projector has no
   * encoder for, marker/file count mismatch, no text after the last file — the messages are listed at
   * NativeTaskParams.images; LLAMA_EXCEED_CONTEXT: text plus media positions exceed the slot), before any `token`
   * event.
   */
  submit(task: NativeTaskParams, onEvent: (event: NativeEvent) => void): number;
  /**
   * Cancels a task: it ends with a `done` event, reason 'cancelled', within one decode step. An embed() job id (see
   * embed's `onJobId`) makes that embed() reject with LLAMA_CANCELLED, before its next batch or sooner (the running
   * llama_decode is aborted). Unknown or finished ids are ignored.
   */
  cancel(taskId: number): void;
  stats(): NativeContextStats;
  /**
   * Where the context's memory lives, per buffer type (entries with a non-zero size); with params.draftModel the draft
   * model's weights and context are added in. Throws LLAMA_DISPOSED.
   */
  memory(): NativeMemoryEntry[];
  /**
   * Threads of the following decodes (llama_set_n_threads, applied before the next step; clamped by ggml to the
   * thread pool size, params.nThreadsMax). `nThreadsBatch` defaults to `nThreads`. Throws LLAMA_INVALID_ARGUMENT
   * (not an integer in [1, 1024]), LLAMA_DISPOSED.
   */
  setThreads(nThreads: number, nThreadsBatch?: number): void;
  /**
   * Embeds inputs (token ids) on the decode thread of an embedding context, packing as many inputs per
   * llama_encode/llama_decode as fit n_batch (one sequence each, up to max(nParallel, 64) sequences per batch, over one
   * unified KV stream cleared before each batch), and returns one pooled vector per input, in order: n_embd_out
   * floats, NOT normalized. Rejects LLAMA_INVALID_ARGUMENT (not an embedding context, an empty input),
   * LLAMA_EXCEED_CONTEXT (an input longer than n_ubatch or the slot context), LLAMA_DISPOSED, LLAMA_CANCELLED (after
   * cancel(jobId)). `onJobId` is called synchronously, before embed() returns, with the job's id for cancel() (not
   * called when `inputs` is empty: that resolves to [] at once).
   */
  embed(inputs: Int32Array[], onJobId?: (jobId: number) => void): Promise<Float32Array[]>;
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
  /**
   * llamad's package.json `version` the addon was built from (compiled in by CMakeLists.txt). loadBinding() refuses
   * an addon whose version or `abi` is not the JavaScript's (docs/native.md "Version and ABI").
   */
  version: string;
  /**
   * The addon's ABI number (native/addon_abi.h), equal to LLAMAD_ADDON_ABI of src/native/addon-identity.ts; bumped
   * whenever this file changes incompatibly.
   */
  abi: number;
  Model: new (path: string, params?: NativeModelParams) => NativeModel;
  /**
   * `new Context(model, params)` creates the context on the JS thread (≈ 0.1 s per slot: KV cache, thread pools,
   * LoRA adapters, projector) and throws LLAMA_CONTEXT_CREATE_FAILED, LLAMA_MODEL_LOAD_FAILED (adapter, projector),
   * LLAMA_INVALID_ARGUMENT, LLAMA_DISPOSED. `Context.create(model, params)` does the same work on the libuv thread
   * pool and resolves with the context; every failure rejects with the same codes, and a model disposed before the
   * creation finished rejects it with LLAMA_DISPOSED (the model is freed after the creation ended).
   */
  Context: {
    new (model: NativeModel, params: NativeContextParams): NativeContext;
    create(model: NativeModel, params: NativeContextParams): Promise<NativeContext>;
  };
  /** llama_print_system_info(): CPU features and backends compiled in. */
  systemInfo(): string;
  /** Names of the ggml backend devices available (e.g. ["CPU"], ["CUDA0", "CPU"]). */
  devices(): string[];
  /** Routes llama.cpp / ggml log lines to `fn` (level: ggml_log_level); null restores silence. */
  setLogger(fn: ((level: number, text: string) => void) | null): void;
  /** Converts a JSON Schema (JSON text) to a GBNF grammar (common json_schema_to_grammar); throws LLAMA_INVALID_ARGUMENT. */
  jsonSchemaToGrammar(schema: string): string;
  /** Quantizes a GGUF file with llama_model_quantize on a worker thread (rejects with LLAMA_QUANTIZE_FAILED). */
  quantize(input: string, output: string, params: NativeQuantizeParams): Promise<void>;
}
