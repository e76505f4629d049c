import { DoneReason, GenerationEvent, GenerationMetrics, ToolCall } from '../../generation';
import { anthropicId } from './anthropic-ids';
import { AnthropicContentBlock, AnthropicMessage, AnthropicStopReason, AnthropicUsage } from './anthropic.types';

/**
 * stop_reason of a finished generation (reference/ollama-api.md §12.8; the Messages API's stop_reason): `tool_use`
 * when any tool call was made, `max_tokens` for `length`, `stop_sequence` only when the stop string that ended
 * generation is one of the request's `stop_sequences`, else `end_turn` (end of generation, or a stop of the template
 * or Modelfile).
 * @param matchedStop the stop string that ended generation, when one matched (any source).
 * @param stopSequences the request's `stop_sequences`.
 */
export function toStopReason(
  reason: DoneReason,
  hadToolCalls: boolean,
  matchedStop: string | undefined,
  stopSequences: readonly string[] | undefined,
): AnthropicStopReason {
  if (hadToolCalls) return 'tool_use';
  if (reason === 'length') return 'max_tokens';
  if (matchedStop !== undefined && (stopSequences ?? []).includes(matchedStop)) return 'stop_sequence';
  return 'end_turn';
}

/** `stop_sequence` of a response: the matched stop string when stop_reason is `stop_sequence`, else null. */
export function toStopSequence(stopReason: AnthropicStopReason, matchedStop: string | undefined): string | null {
  return stopReason === 'stop_sequence' ? (matchedStop ?? null) : null;
}

/**
 * usage (tokens) from the final metrics: `input_tokens` = whole prompt (`promptEvalCount`) − reused part
 * (`promptCachedCount`), `cache_read_input_tokens` = the reused part, `cache_creation_input_tokens` 0,
 * `output_tokens` = generated (`evalCount`); zeros when absent.
 */
export function toUsage(metrics: GenerationMetrics | undefined): AnthropicUsage {
  const prompt = metrics?.promptEvalCount ?? 0;
  const cached = Math.min(prompt, metrics?.promptCachedCount ?? 0);
  return {
    input_tokens: prompt - cached,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
    output_tokens: metrics?.evalCount ?? 0,
  };
}

/** A tool call as a tool_use block (`toolu_…` id generated when the model gave none). */
export function toToolUseBlock(call: ToolCall): Extract<AnthropicContentBlock, { type: 'tool_use' }> {
  return {
    type: 'tool_use',
    id: call.id || anthropicId('toolu'),
    name: call.function.name,
    input: call.function.arguments,
  };
}

/**
 * Collects a whole generation into the non-streaming response: content blocks in the order thinking, text,
 * tool_use (empty ones left out; `content` is `[]` when the model produced nothing), stop_reason, `stop_sequence`
 * (the matched request stop sequence, null when none), usage in tokens (toUsage).
 */
export class AnthropicMessageAccumulator {
  private text = '';
  private thinking = '';
  private readonly toolCalls: ToolCall[] = [];
  private readonly toolIds = new Set<string>();
  private done?: Extract<GenerationEvent, { kind: 'done' }>;

  /**
   * @param id the message id (`msg_…`).
   * @param model the model name as requested.
   * @param stopSequences the request's `stop_sequences` (for stop_reason, see toStopReason).
   */
  constructor(
    private readonly id: string,
    private readonly model: string,
    private readonly stopSequences?: readonly string[],
  ) {}

  add(event: GenerationEvent): void {
    if (event.kind === 'done') this.done = event;
    this.text += event.text ?? '';
    this.thinking += event.thinking ?? '';
    for (const call of event.toolCalls ?? []) {
      if (call.id && this.toolIds.has(call.id)) continue;
      if (call.id) this.toolIds.add(call.id);
      this.toolCalls.push(call);
    }
  }

  result(): AnthropicMessage {
    const content: AnthropicContentBlock[] = [];
    if (this.thinking) content.push({ type: 'thinking', thinking: this.thinking });
    if (this.text) content.push({ type: 'text', text: this.text });
    for (const call of this.toolCalls) content.push(toToolUseBlock(call));
    const matched = this.done?.stopSequence;
    const stopReason = toStopReason(
      this.done?.reason ?? 'stop',
      this.toolCalls.length > 0,
      matched,
      this.stopSequences,
    );
    return {
      id: this.id,
      type: 'message',
      role: 'assistant',
      model: this.model,
      content,
      stop_reason: stopReason,
      stop_sequence: toStopSequence(stopReason, matched),
      usage: toUsage(this.done?.metrics),
    };
  }
}
