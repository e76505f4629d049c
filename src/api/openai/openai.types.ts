/**
 * Wire shapes of the OpenAI-compatible layer (reference/ollama-api.md §12.2–§12.5, §5.3). Requests are typed loosely
 * (`unknown` where clients send several forms) because the mapper validates them with Ollama's texts; responses are
 * exact. Field names stay snake_case (wire), timestamps are Unix seconds, counts are tokens.
 */

/** One content part of a chat message (`text`, `image_url` as object or string; others are rejected). */
export interface OpenAIContentPart {
  type?: string;
  text?: string;
  image_url?: string | { url?: string; detail?: string };
  /** `input_audio` parts: `{data: base64, format: "wav" | "mp3" | "flac"}` (input-audio.ts). */
  input_audio?: unknown;
}

/** A tool call as OpenAI sends and returns it: `arguments` is JSON TEXT. */
export interface OpenAIToolCall {
  id: string;
  /** Present in stream deltas (the SDK accumulates by it); omitted in non-stream messages by OpenAI, kept here. */
  index?: number;
  type: 'function';
  function: { name: string; arguments: string };
}

/** `POST /v1/chat/completions` request (fields honoured by §12.2; the rest ignored). */
export interface OpenAIChatRequest {
  model?: unknown;
  messages?: unknown;
  stream?: unknown;
  stream_options?: { include_usage?: unknown } | null;
  max_tokens?: unknown;
  max_completion_tokens?: unknown;
  temperature?: unknown;
  top_p?: unknown;
  stop?: unknown;
  seed?: unknown;
  frequency_penalty?: unknown;
  presence_penalty?: unknown;
  response_format?: unknown;
  tools?: unknown;
  tool_choice?: unknown;
  logprobs?: unknown;
  top_logprobs?: unknown;
  reasoning_effort?: unknown;
  reasoning?: { effort?: unknown } | null;
  /** Beyond OpenAI: llama-server's per-request LoRA adapters (api/ollama/dto/lora-request.dto.ts decodeLora). */
  lora?: unknown;
  /**
   * Beyond OpenAI and Ollama's compat layer (Ollama PR 11249): how long the model stays loaded after the request, as
   * the native routes' `keep_alive` (seconds, or a Go duration such as `"5m"`; negative = forever; 0 = unload when
   * idle). Decoded by parseCompatKeepAlive.
   */
  keep_alive?: unknown;
}

/** `POST /v1/completions` request (§12.3). */
export interface OpenAICompletionRequest {
  model?: unknown;
  /** A string, an array of strings, an array of token ids, or an array of token-id arrays (one choice per prompt). */
  prompt?: unknown;
  suffix?: unknown;
  stream?: unknown;
  stream_options?: { include_usage?: unknown } | null;
  max_tokens?: unknown;
  temperature?: unknown;
  top_p?: unknown;
  stop?: unknown;
  seed?: unknown;
  frequency_penalty?: unknown;
  presence_penalty?: unknown;
  /** An integer n > 0: return n alternatives per token. */
  logprobs?: unknown;
  /** Beyond OpenAI: llama-server's per-request LoRA adapters, as on chat completions. */
  lora?: unknown;
  /** Beyond OpenAI: as on chat completions. */
  keep_alive?: unknown;
}

/** `POST /v1/embeddings` request (§12.4). */
export interface OpenAIEmbeddingRequest {
  model?: unknown;
  input?: unknown;
  encoding_format?: unknown;
  dimensions?: unknown;
  /** Beyond OpenAI: as on chat completions. */
  keep_alive?: unknown;
}

/**
 * Token usage (tokens; OpenAI's CompletionUsage): `prompt_tokens` is the whole prompt (reused from the KV cache or
 * evaluated — the same request sent twice reports the same size), `prompt_tokens_details.cached_tokens` the part of
 * it reused from the KV cache (prefix cache), `total_tokens` = prompt + completion.
 */
export interface OpenAIUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

/** One alternative token: natural-log probability, UTF-8 bytes. */
export interface OpenAITopLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

/** The sampled token's logprob with its top alternatives. */
export interface OpenAILogprob extends OpenAITopLogprob {
  top_logprobs: OpenAITopLogprob[];
}

/** The assistant message of a non-stream chat completion. */
export interface OpenAIAssistantMessage {
  role: 'assistant';
  content: string;
  /** Thinking text (Ollama's extension); omitted when empty. */
  reasoning?: string;
  tool_calls?: OpenAIToolCall[];
}

export type OpenAIFinishReason = 'stop' | 'length' | 'tool_calls';

/** `chat.completion` (non-stream answer). */
export interface OpenAIChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  system_fingerprint: string;
  choices: Array<{
    index: number;
    message: OpenAIAssistantMessage;
    finish_reason: OpenAIFinishReason;
    logprobs: { content: OpenAILogprob[] } | null;
  }>;
  usage: OpenAIUsage;
}

/** The delta of one streamed chunk. */
export interface OpenAIChatDelta {
  role?: 'assistant';
  content?: string;
  reasoning?: string;
  tool_calls?: OpenAIToolCall[];
}

/** `chat.completion.chunk` (one SSE frame). */
export interface OpenAIChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  system_fingerprint: string;
  choices: Array<{
    index: number;
    delta: OpenAIChatDelta;
    finish_reason: OpenAIFinishReason | null;
    logprobs?: { content: OpenAILogprob[] } | null;
  }>;
  /** Only on the final usage chunk (`stream_options.include_usage`), whose `choices` is `[]`. */
  usage?: OpenAIUsage;
}

/** `text_completion` (both the non-stream answer and each streamed chunk). */
export interface OpenAICompletion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  system_fingerprint: string;
  choices: Array<{ text: string; index: number; finish_reason: OpenAIFinishReason | null; logprobs: null }>;
  usage?: OpenAIUsage;
}

/** `POST /v1/embeddings` answer; `embedding` is base64 of little-endian float32 when asked for. */
export interface OpenAIEmbeddingResponse {
  object: 'list';
  data: Array<{ object: 'embedding'; embedding: number[] | string; index: number }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/** One entry of `GET /v1/models`; `created` is the manifest mtime in Unix seconds. */
export interface OpenAIModel {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  /**
   * Only on a model with ADAPTER (LoRA) layers (vLLM's adapter entries; beyond Ollama): its first adapter blob's
   * digest (`sha256:<hex>`; vLLM gives the adapter's path).
   */
  root?: string;
  /**
   * Only on a model with ADAPTER layers: the listed model over the same weights without adapters (vLLM: the base
   * model); omitted when there is none.
   */
  parent?: string;
  /**
   * Beyond OpenAI and Ollama (OpenRouter's name; LM Studio issue 2139): the context one request can use, tokens —
   * the loaded (or loading) runner's num_ctx per slot (as /api/ps `context_length`), else the num_ctx a load would use
   * now (generation/context-length.service.ts). Omitted only when the model cannot be resolved.
   */
  context_length?: number;
  /**
   * Beyond OpenAI and Ollama (LM Studio's REST API name): the model's trained context (GGUF `<arch>.context_length`),
   * tokens — the most a load with a larger `num_ctx` can give; omitted when the GGUF does not say.
   */
  max_context_length?: number;
}

/** `GET /v1/models`: `data` is always an array (`[]` when empty, unlike Ollama's `null`). */
export interface OpenAIModelList {
  object: 'list';
  data: OpenAIModel[];
}

/** The error body (§5.3). */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}
