import { DoneReason, GenerationEvent, GenerationMetrics, ToolCall } from '../../inference';
import { anthropicId } from './anthropic-ids';
import { AnthropicContentBlock, AnthropicMessage, AnthropicStopReason, AnthropicUsage } from './anthropic.types';

/**
 * stop_reason of a finished generation (reference/ollama-api.md §12.8): `tool_use` when any tool call was made,
 * `max_tokens` for `length`, `stop_sequence` when a stop sequence is known to have matched, else `end_turn`.
 * @param matchedStop the stop sequence that ended generation, when one matched.
 */
export function toStopReason(reason: DoneReason, hadToolCalls: boolean, matchedStop?: string): AnthropicStopReason {
  if (hadToolCalls) return 'tool_use';
  if (reason === 'length') return 'max_tokens';
  if (matchedStop !== undefined) return 'stop_sequence';
  return 'end_turn';
}

/** usage from the final metrics: prompt tokens evaluated and tokens generated (0 when absent). */
export function toUsage(metrics: GenerationMetrics | undefined): AnthropicUsage {
  return { input_tokens: metrics?.promptEvalCount ?? 0, output_tokens: metrics?.evalCount ?? 0 };
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
 * (the matched stop sequence, null when none), usage in tokens.
 */
export class AnthropicMessageAccumulator {
  private text = '';
  private thinking = '';
  private readonly toolCalls: ToolCall[] = [];
  private readonly toolIds = new Set<string>();
  private done?: Extract<GenerationEvent, { kind: 'done' }>;

  constructor(
    private readonly id: string,
    private readonly model: string,
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
    const stopReason = toStopReason(this.done?.reason ?? 'stop', this.toolCalls.length > 0, this.done?.stopSequence);
    return {
      id: this.id,
      type: 'message',
      role: 'assistant',
      model: this.model,
      content,
      stop_reason: stopReason,
      stop_sequence: stopReason === 'stop_sequence' ? (this.done?.stopSequence ?? null) : null,
      usage: toUsage(this.done?.metrics),
    };
  }
}
