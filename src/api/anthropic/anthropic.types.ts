/**
 * Wire shapes of the Anthropic Messages API as this daemon serves it (reference/ollama-api.md §12.8; clients.md §1.3).
 * Field names stay snake_case (wire names). Token counts are tokens of the model's own tokenizer.
 */

/** A response content block: text, tool_use (input = parsed arguments object) or thinking (no signature, §12.8). */
export type AnthropicContentBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'thinking'; thinking: string };

/** Why the message ended (§12.8): tool_use if any tool call; stop → end_turn; length → max_tokens. */
export type AnthropicStopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

/**
 * `usage` in tokens (the Messages API's Usage): `input_tokens` = the prompt minus its part reused from the KV cache,
 * `cache_read_input_tokens` = that reused part (prefix cache), so `input_tokens + cache_read_input_tokens` is the whole
 * prompt (what /v1/messages/count_tokens returns); `cache_creation_input_tokens` is always 0 (nothing is written to a
 * separate cache); `output_tokens` = tokens generated.
 */
export interface AnthropicUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
}

/** The non-streaming response body of POST /v1/messages. */
export interface AnthropicMessage {
  /** `msg_<24 hex>`. */
  id: string;
  type: 'message';
  role: 'assistant';
  /** The model name exactly as requested. */
  model: string;
  content: AnthropicContentBlock[];
  stop_reason: AnthropicStopReason | null;
  /** The matched stop sequence, null when none (the spec's messages section). */
  stop_sequence: string | null;
  usage: AnthropicUsage;
}

/** One server-sent event: `event: <event>\ndata: <JSON of data>\n\n`; `event` always equals `data.type`. */
export interface SseFrame {
  event: string;
  data: { type: string } & Record<string, unknown>;
}

/** The Anthropic error body (reference/ollama-api.md §5.4). */
export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string };
  /** `req_<24 hex>`. */
  request_id: string;
}
