// Ollama `api.GenerateResponse` / `api.ChatResponse` / metrics (api/types.go) — wire shapes of the answers.
// Spec: seed §2 "Generation result fields"; details: reference/ollama-api.md §3.2, §3.3, §12.1.

/** Metrics of the final chunk, nanoseconds and tokens; zero values are omitted (Go `omitempty`). */
export interface MetricsWire {
  total_duration?: number;
  load_duration?: number;
  prompt_eval_count?: number;
  prompt_eval_duration?: number;
  eval_count?: number;
  eval_duration?: number;
}

/** `api.ToolCall` on the wire: `id` omitted when empty, `index` always present, `arguments` a JSON object. */
export interface ToolCallWire {
  id?: string;
  function: { index: number; name: string; arguments: Record<string, unknown> };
}

/** `api.TokenLogprob`: natural-log probability and the token's UTF-8 bytes. */
export interface TokenLogprobWire {
  token: string;
  logprob: number;
  bytes?: number[];
}

/** `api.Logprob`: the sampled token plus its top alternatives (omitted when none were asked for). */
export interface LogprobWire extends TokenLogprobWire {
  top_logprobs?: TokenLogprobWire[];
}

/** A chunk (or the single response) of /api/generate. */
export interface GenerateResponseWire extends MetricsWire {
  model: string;
  /** RFC 3339 UTC, e.g. `2025-10-26T17:15:24.097Z`. */
  created_at: string;
  response: string;
  /** Thinking text of this chunk; omitted when empty. */
  thinking?: string;
  done: boolean;
  done_reason?: string;
  /** Prompt + output token ids; final chunk only, not in raw mode. */
  context?: number[];
  tool_calls?: ToolCallWire[];
  logprobs?: LogprobWire[];
}

/** `message` of a chat chunk. */
export interface ChatMessageWire {
  role: 'assistant';
  content: string;
  thinking?: string;
  tool_calls?: ToolCallWire[];
}

/** A chunk (or the single response) of /api/chat. */
export interface ChatResponseWire extends MetricsWire {
  model: string;
  created_at: string;
  message: ChatMessageWire;
  done: boolean;
  done_reason?: string;
  logprobs?: LogprobWire[];
}
