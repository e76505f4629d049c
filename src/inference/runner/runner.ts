import { Observable } from 'rxjs';
import { LoadOptions } from '../options';

/**
 * The runner seam (Ollama's `llm.LlamaServer`, ARCHITECTURE.md §4): one loaded model with its slots. The scheduler
 * creates runners through RUNNER_FACTORY, so tests can swap in fakes. Units: tokens, nanoseconds.
 */

/** What a runner is loaded with; two requests share a runner only when their specs are equal. */
export interface RunnerSpec extends LoadOptions {
  /** Absolute path of the GGUF weights blob. */
  modelPath: string;
  /** Slots (sequences decoded together); the KV cache holds numCtx × numParallel tokens. */
  numParallel: number;
}

/** Sampling parameters of one generation (binding.d.ts NativeSamplingParams). */
export interface RunnerSampling {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  typicalP: number;
  repeatPenalty: number;
  repeatLastN: number;
  presencePenalty: number;
  frequencyPenalty: number;
  seed: number;
  grammar?: string;
}

/** One generation request. */
export interface RunnerRequest {
  /** Prompt token ids, non-empty, shorter than the slot context. */
  tokens: number[];
  /** Tokens to generate; -1 = until end of generation or the slot is full. */
  numPredict: number;
  sampling: RunnerSampling;
  /** Stop strings; the matched one is not emitted. */
  stop: string[];
}

/** Prompt/generation counts and durations of one finished generation. */
export interface RunnerTimings {
  /** Prompt tokens evaluated (after prefix-cache reuse). */
  promptEvalCount: number;
  promptEvalDurationNs: number;
  /** Tokens generated. */
  evalCount: number;
  evalDurationNs: number;
}

/**
 * Events of one generation, in order: `token` zero or more times, then one `done` (the Observable then completes).
 * `text` may be '' while the runner holds back an incomplete UTF-8 sequence or a possible stop string.
 * Errors arrive as Observable errors (domain errors); a cancelled generation never emits `done`.
 */
export type RunnerEvent =
  | { kind: 'token'; text: string; token: number }
  | { kind: 'done'; reason: 'stop' | 'length'; timings: RunnerTimings };

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
  /** Whether the GGUF carries a chat template. */
  hasChatTemplate: boolean;
}

export interface Runner {
  readonly spec: RunnerSpec;
  readonly info: RunnerModelInfo;
  /** Context of one slot, tokens (a prompt must be shorter than this). */
  readonly slotContext: number;
  /**
   * Starts a generation when subscribed; unsubscribing cancels it (the slot is freed within one decode step).
   * Errors: ContextLengthExceededError, InvalidRequestError, InternalError (domain errors).
   */
  generate(request: RunnerRequest): Observable<RunnerEvent>;
  /** Tokenizes text; `parseSpecial` turns control-token text (`<|im_start|>`) into control tokens. */
  tokenize(text: string, options: { addSpecial: boolean; parseSpecial: boolean }): number[];
  /** Text of token ids (special tokens rendered as text). */
  detokenize(tokens: number[]): string;
  /**
   * Renders messages with the model's GGUF (Jinja) chat template.
   * @throws InvalidRequestError `template error: …` when the template rejects the conversation.
   */
  applyChatTemplate(messages: RunnerChatMessage[], options: { addGenerationPrompt: boolean }): string;
  /** Cancels running generations and frees the model. Idempotent. */
  close(): Promise<void>;
}

/** Creates (loads) runners. Rejects with ModelLoadError / InsufficientMemoryError. */
export interface RunnerFactory {
  create(spec: RunnerSpec): Promise<Runner>;
}

/** DI token of the RunnerFactory (Ollama's `newServerFn`): LlamaRunnerFactory in production, fakes in tests. */
export const RUNNER_FACTORY = Symbol('RUNNER_FACTORY');
