import { OptionMap } from '../common/options';
import { KeepAliveMs } from '../common/time';

/**
 * Domain types of text generation (ARCHITECTURE.md §5 step 3): what the generate/chat services emit, independent of
 * any wire dialect. Durations in nanoseconds, counts in tokens.
 */

/** Why a generation ended: `stop` (end-of-generation token or stop string), `length` (num_predict or context
 * full), `load` / `unload` (the empty-prompt shortcuts, reference/ollama-api.md §3.2 steps 4 and 9). */
export type DoneReason = 'stop' | 'length' | 'load' | 'unload';

/** Ollama's metrics of one request (final chunk only). */
export interface GenerationMetrics {
  /** Handler start → final event, ns. */
  totalDurationNs: number;
  /** Waiting for the scheduler and the model load, ns. */
  loadDurationNs: number;
  /**
   * Tokens of the whole prompt, reused or evaluated (Ollama counts it so since 0.30.1; reference §3.2): the same
   * request sent twice reports the same count.
   */
  promptEvalCount: number;
  /** Of `promptEvalCount`, tokens reused from the KV cache (OpenAI `cached_tokens`, Anthropic `cache_read_input_tokens`). */
  promptCachedCount: number;
  /** Time spent evaluating the tokens that were not reused, ns. */
  promptEvalDurationNs: number;
  evalCount: number;
  evalDurationNs: number;
}

/** A tool call in Ollama's shape (`api.ToolCall`): arguments are a JSON object, `index` always present. */
export interface ToolCall {
  /** Omitted on the wire when empty. */
  id?: string;
  function: { index: number; name: string; arguments: Record<string, unknown> };
}

/** One alternative token with its natural-log probability and UTF-8 bytes (Ollama `api.TokenLogprob`). */
export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

/** The sampled token's logprob plus the top alternatives (Ollama `api.Logprob`). */
export interface Logprob extends TokenLogprob {
  topLogprobs: TokenLogprob[];
}

/**
 * Events of one generate/chat request: deltas (content `text`, `thinking`, parsed `toolCalls`, `logprobs` of the
 * tokens behind it — any may be empty), then exactly one `done`, which may carry what the output parser only
 * released at the end (native mode's tool calls, held-back text).
 */
export type GenerationEvent =
  | { kind: 'delta'; text: string; thinking?: string; toolCalls?: ToolCall[]; logprobs?: Logprob[] }
  | {
      kind: 'done';
      reason: DoneReason;
      /** Absent on the load/unload shortcuts. */
      metrics?: GenerationMetrics;
      /** Prompt + output token ids (generate without raw). */
      context?: number[];
      /** Content / thinking / tool calls released only when generation ended. */
      text?: string;
      thinking?: string;
      toolCalls?: ToolCall[];
      /** The request's stop sequence that ended generation, when one matched. */
      stopSequence?: string;
    };

/** A chat message in domain form (roles as sent, lower-cased). */
export interface ChatMessage {
  role: string;
  content: string;
  images?: string[];
  /**
   * Base64 audio files (WAV, MP3, FLAC; issue 38, beyond Ollama's api.Message): sent to the engine like images, one
   * media marker each, numbered `[img-N]` after the message's images (generation/prompt/audio.ts).
   */
  audio?: string[];
  /** Assistant reasoning of an earlier turn. */
  thinking?: string;
  toolCalls?: ToolCall[];
  /** On role `tool`: the tool that produced this result, and the call it answers. */
  toolName?: string;
  toolCallId?: string;
}

/** A tool definition as sent (`api.Tool`): `{type: "function", function: {name, description, parameters}}`. */
export interface ToolDefinition {
  type?: string;
  function?: { name?: string; description?: string; parameters?: unknown };
}

/** A validated `format`: `json` (any JSON object) or a JSON Schema (reference/ollama-api.md §9). */
export type OutputFormat = { kind: 'json' } | { kind: 'schema'; schema: Record<string, unknown> };

/**
 * One entry of a request's `lora` list (llama-server's per-request form `lora: [{id, scale}]`, plus `name`; beyond
 * Ollama): exactly one of `id` (index into the requested model's own adapters, its Modelfile ADAPTER layers in order)
 * and `name` (another model over the same weights whose adapters are applied), with the adapters' multiplier
 * `scale` (finite, |scale| ≤ 100). Resolved by generation/lora-selection.ts resolveLoras.
 */
export interface LoraSelection {
  id?: number;
  name?: string;
  scale: number;
}

/** Fields shared by generate and chat commands. */
interface InferenceCommandBase {
  /** The model name exactly as the client sent it (echoed in responses and in errors). */
  model: string;
  /** Typed request options (unknown keys dropped). */
  options: OptionMap;
  /** Parsed keep_alive; undefined = not given. */
  keepAliveMs?: KeepAliveMs;
  /** Validated `format` (structured output, §9); undefined = free text. */
  format?: OutputFormat;
  /** `think` as sent (true/false or a level); undefined = default (on for thinking-capable models, §4.3). */
  think?: boolean | string;
  /** `truncate` (default true): false makes an over-long prompt a 400 instead of cutting it (§4.4). */
  truncate?: boolean;
  /**
   * `shift` (default true): when the context (num_ctx tokens) fills during generation, keep the first num_keep tokens
   * (+BOS), drop half of the rest and go on (llama-server `--context-shift`, reference §4.4); false ends the
   * generation with `done_reason: "length"` at the full context.
   */
  shift?: boolean;
  /**
   * Never cut an over-long prompt (implies `truncate: false`): reload the model with a context that holds it (up to
   * the trained context and OLLAMA_CONTEXT_LENGTH, as memory allows), else 400. Set by the compat layers, whose
   * agents must see their whole system prompt and tools (issue 12 §5; beyond Ollama).
   */
  growContext?: boolean;
  /** Alternatives per token when logprobs were asked for (`logprobs: true`, `top_logprobs` 0..20); else undefined. */
  topLogprobs?: number;
  /**
   * `lora` as sent (validated shape): the adapters to apply instead of the model's own (Modelfile ADAPTER) set; an
   * empty list = the base weights. Undefined = the model's own adapters at scale 1.
   */
  lora?: LoraSelection[];
  /** process.hrtime.bigint() when the handler started (for total_duration). */
  startedAt: bigint;
}

/** A /api/generate request in domain form. */
export interface GenerateCommand extends InferenceCommandBase {
  prompt: string;
  /**
   * The prompt as token ids of the model's vocabulary (OpenAI /v1/completions token prompts; non-empty): detokenized
   * with the loaded model (special tokens as their text) and then used exactly like `prompt`, which is ignored. An id
   * outside the vocabulary is a 400.
   */
  promptTokens?: number[];
  suffix?: string;
  system?: string;
  /** A Go template override (rendered mode, §8.1). */
  template?: string;
  /** Deprecated context from a previous response: detokenized and prepended. */
  context?: number[];
  raw: boolean;
  images?: string[];
  /** Base64 audio files (like ChatMessage.audio): after the images, in the prompt's user message. */
  audio?: string[];
}

/** A /api/chat request in domain form. */
export interface ChatCommand extends InferenceCommandBase {
  messages: ChatMessage[];
  /** Tool definitions (need the tools capability). */
  tools?: ToolDefinition[];
  /**
   * 'required': the model must call one of `tools` (the compat layers' `tool_choice` "required"/"any" or a named
   * tool, whose `tools` are then only that one). Enforced by a grammar from the first generated token: native (Jinja)
   * mode uses llama.cpp common/chat's tool-call grammar, rendered (Go template) mode one built from the template's own
   * tool-call syntax with each tool's arguments schema (beyond Ollama, which ignores tool_choice). Absent = 'auto'.
   * "none" has no value here: the compat mappers drop the tools instead, so they never reach the prompt.
   */
  toolChoice?: 'auto' | 'required';
}

/** Observes one chat() call (the compat layers use it to report usage before the first token). */
export interface ChatObserver {
  /**
   * Called once the prompt is built, before generation starts and before the first event: its size in tokens — the
   * whole prompt as submitted (after any fitting), i.e. the `promptEvalCount` the done event will report (reused +
   * evaluated). With images or audio, the text tokens only (the engine adds the media embeddings).
   */
  onPrompt?(promptTokens: number): void;
}
