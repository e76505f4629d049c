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

/** A chunk (or the single response) of /api/generate. */
export interface GenerateResponseWire extends MetricsWire {
  model: string;
  /** RFC 3339 UTC, e.g. `2025-10-26T17:15:24.097Z`. */
  created_at: string;
  response: string;
  done: boolean;
  done_reason?: string;
  /** Prompt + output token ids; final chunk only, not in raw mode. */
  context?: number[];
}

/** A chunk (or the single response) of /api/chat. */
export interface ChatResponseWire extends MetricsWire {
  model: string;
  created_at: string;
  message: { role: 'assistant'; content: string };
  done: boolean;
  done_reason?: string;
}
