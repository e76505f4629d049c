import { GenerationEvent, ToolCall } from '../../generation';
import { toStopReason, toStopSequence, toToolUseBlock, toUsage } from './anthropic-response.mapper';
import { SseFrame } from './anthropic.types';

/** A frame whose `event:` line equals its data's `type` (clients.md §1.0 item 5: frames without one are skipped). */
function frame(data: { type: string } & Record<string, unknown>): SseFrame {
  return { event: data.type, data };
}

/** `event: <name>\ndata: <json>\n\n`. */
export function encodeSseFrame(f: SseFrame): string {
  return `event: ${f.event}\ndata: ${JSON.stringify(f.data)}\n\n`;
}

/**
 * Turns the GenerationEvents of ONE request into Anthropic SSE frames (reference/ollama-api.md §12.8): stateful, one
 * instance per request. The first process() call opens with `message_start` (empty content; usage with the prompt size
 * given to setPromptTokens — the whole prompt as `input_tokens`, `cache_read_input_tokens` 0, since the part reused
 * from the KV cache is only known when generation ends — else the estimate) and a `ping`; text and thinking open a
 * block of their kind (closing the other), each delta is a `text_delta` / `thinking_delta`; every tool call is a whole
 * tool_use block (`content_block_start` with `input: {}`, one complete `input_json_delta`, `content_block_stop`),
 * de-duplicated by id; the `done` event closes the open block and ends with `message_delta` (stop_reason,
 * stop_sequence — the matched request stop sequence or null, usage with the final split of the prompt: input_tokens +
 * cache_read_input_tokens, output_tokens; the SDK overwrites message_start's usage with it) and `message_stop`.
 * finish() emits what is still missing when the source completed without `done`.
 */
export class AnthropicStreamConverter {
  private started = false;
  private finished = false;
  private index = -1;
  private open?: 'text' | 'thinking';
  private hadToolCalls = false;
  private readonly toolIds = new Set<string>();
  private promptTokens: number;

  /**
   * @param id the message id (`msg_…`).
   * @param model the model name as requested.
   * @param estimatedInputTokens message_start's usage.input_tokens when setPromptTokens was not called before it.
   * @param stopSequences the request's `stop_sequences` (for stop_reason, see toStopReason).
   */
  constructor(
    private readonly id: string,
    private readonly model: string,
    estimatedInputTokens: number,
    private readonly stopSequences?: readonly string[],
  ) {
    this.promptTokens = estimatedInputTokens;
  }

  /** The prompt's real size (tokens, the whole prompt), known once it is built (ChatObserver.onPrompt). */
  setPromptTokens(tokens: number): void {
    this.promptTokens = tokens;
  }

  process(event: GenerationEvent): SseFrame[] {
    if (this.finished) return [];
    const out = this.start();
    if (event.thinking) out.push(...this.delta('thinking', event.thinking));
    if (event.text) out.push(...this.delta('text', event.text));
    for (const call of event.toolCalls ?? []) out.push(...this.toolUse(call));
    if (event.kind === 'done') {
      out.push(...this.closeBlock());
      const stopReason = toStopReason(event.reason, this.hadToolCalls, event.stopSequence, this.stopSequences);
      const stopSequence = toStopSequence(stopReason, event.stopSequence);
      out.push(
        frame({
          type: 'message_delta',
          delta: { stop_reason: stopReason, stop_sequence: stopSequence },
          // Without metrics (the source ended without `done`) only output_tokens: the SDK would overwrite
          // message_start's input counts with zeros.
          usage: event.metrics ? toUsage(event.metrics) : { output_tokens: 0 },
        }),
        frame({ type: 'message_stop' }),
      );
      this.finished = true;
    }
    return out;
  }

  /** Closing frames when the source ended without a `done` event (end_turn, output_tokens 0); [] when done. */
  finish(): SseFrame[] {
    if (this.finished) return [];
    return this.process({ kind: 'done', reason: 'stop' });
  }

  private start(): SseFrame[] {
    if (this.started) return [];
    this.started = true;
    return [
      frame({
        type: 'message_start',
        message: {
          id: this.id,
          type: 'message',
          role: 'assistant',
          model: this.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: {
            input_tokens: this.promptTokens,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            output_tokens: 0,
          },
        },
      }),
      frame({ type: 'ping' }),
    ];
  }

  private delta(kind: 'text' | 'thinking', piece: string): SseFrame[] {
    const out: SseFrame[] = [];
    if (this.open !== kind) {
      out.push(...this.closeBlock());
      this.index += 1;
      this.open = kind;
      out.push(
        frame({
          type: 'content_block_start',
          index: this.index,
          content_block: kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '' },
        }),
      );
    }
    out.push(
      frame({
        type: 'content_block_delta',
        index: this.index,
        delta: kind === 'text' ? { type: 'text_delta', text: piece } : { type: 'thinking_delta', thinking: piece },
      }),
    );
    return out;
  }

  private toolUse(call: ToolCall): SseFrame[] {
    if (call.id && this.toolIds.has(call.id)) return [];
    if (call.id) this.toolIds.add(call.id);
    this.hadToolCalls = true;
    const block = toToolUseBlock(call);
    const out = this.closeBlock();
    this.index += 1;
    out.push(
      frame({ type: 'content_block_start', index: this.index, content_block: { ...block, input: {} } }),
      frame({
        type: 'content_block_delta',
        index: this.index,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) },
      }),
      frame({ type: 'content_block_stop', index: this.index }),
    );
    return out;
  }

  private closeBlock(): SseFrame[] {
    if (!this.open) return [];
    this.open = undefined;
    return [frame({ type: 'content_block_stop', index: this.index })];
  }
}
