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
  promptEvalCount: number;
  promptEvalDurationNs: number;
  evalCount: number;
  evalDurationNs: number;
}

/** Events of one generate/chat request: text deltas, then exactly one `done`. */
export type GenerationEvent =
  | { kind: 'delta'; text: string }
  | {
      kind: 'done';
      reason: DoneReason;
      /** Absent on the load/unload shortcuts. */
      metrics?: GenerationMetrics;
      /** Prompt + output token ids (generate without raw). */
      context?: number[];
    };

/** A chat message in domain form (roles as sent, lower-cased). */
export interface ChatMessage {
  role: string;
  content: string;
  images?: string[];
}

/** Fields shared by generate and chat commands. */
interface InferenceCommandBase {
  /** The model name exactly as the client sent it (echoed in responses and in errors). */
  model: string;
  /** Typed request options (unknown keys dropped). */
  options: OptionMap;
  /** Parsed keep_alive; undefined = not given. */
  keepAliveMs?: KeepAliveMs;
  /** `format` as sent (`"json"` or a schema): accepted, not enforced yet. */
  format?: unknown;
  /** `think` as sent: accepted; rejected for models without the thinking capability. */
  think?: boolean | string;
  /** process.hrtime.bigint() when the handler started (for total_duration). */
  startedAt: bigint;
}

/** A /api/generate request in domain form. */
export interface GenerateCommand extends InferenceCommandBase {
  prompt: string;
  suffix?: string;
  system?: string;
  /** A Go template override: accepted; until the Go renderer exists the GGUF template is used (logged). */
  template?: string;
  /** Deprecated context from a previous response: detokenized and prepended. */
  context?: number[];
  raw: boolean;
  images?: string[];
}

/** A /api/chat request in domain form. */
export interface ChatCommand extends InferenceCommandBase {
  messages: ChatMessage[];
  /** Tool definitions: accepted when the model has the tools capability, not yet passed to the template. */
  tools?: unknown[];
}
