import type { ChatMessage, GenerationEvent, GenerationMetrics, ToolCall } from '../../../generation';
import { toOpenAIError } from '..';
import { responsesId } from './responses-ids';
import {
  ResponseEcho,
  ResponseFunctionCall,
  ResponseObject,
  ResponseOutputItem,
  ResponseOutputMessage,
  ResponseReasoningItem,
  ResponseStreamEvent,
  ResponseUsage,
} from './responses.types';

/** A stream event before its sequence number is assigned. */
type Unnumbered<E> = E extends unknown ? Omit<E, 'sequence_number'> : never;
type PendingEvent = Unnumbered<ResponseStreamEvent>;

/** The open text-like item (a message or a reasoning item) that deltas append to. */
interface OpenItem {
  kind: 'message' | 'reasoning';
  index: number;
  id: string;
  text: string;
}

/** Now in Unix seconds. */
function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}

/**
 * Usage from the final metrics (zeros when absent, e.g. the load shortcut): input = the whole prompt
 * (`promptEvalCount`), cached = its part reused from the KV cache, output = generated tokens; `reasoning_tokens` is
 * the number of generated pieces that carried thinking (each delta comes from one sampled token, so this is exact
 * unless the output parser merged tokens, then a lower bound).
 */
export function toResponseUsage(metrics: GenerationMetrics | undefined, reasoningTokens: number): ResponseUsage {
  const input = metrics?.promptEvalCount ?? 0;
  const output = metrics?.evalCount ?? 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: metrics?.promptCachedCount ?? 0, cache_write_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: Math.min(reasoningTokens, output) },
    total_tokens: input + output,
  };
}

/**
 * Turns the GenerationEvents of ONE request into Responses stream events (reference/ollama-api.md §12.6; the openai
 * SDK's ResponseStream accumulator): stateful, one instance per response; every event gets the next
 * `sequence_number` (from 0). The first process() call opens with `response.created` and `response.in_progress`
 * (status in_progress, `output: []`). Thinking and text each open an item of their kind, closing the other:
 * - reasoning `rs_…`: output_item.added, content_part.added (reasoning_text), response.reasoning_text.delta…,
 *   response.reasoning_text.done, content_part.done, output_item.done;
 * - message `msg_…`: output_item.added, content_part.added (output_text), response.output_text.delta… (with
 *   `logprobs: []`), response.output_text.done, content_part.done, output_item.done;
 * - every tool call is a whole `fc_…` item with a fresh `call_…` id: output_item.added (arguments ""),
 *   response.function_call_arguments.delta (the complete JSON), .done, output_item.done.
 * The `done` event closes the open item (an empty message is produced when there is no output at all) and ends with
 * `response.completed`, or `response.incomplete` (`incomplete_details.reason: "max_output_tokens"`) when generation
 * hit its token limit; both carry the full response with usage. `output_index` is the item's position in `output`,
 * `content_index` is always 0.
 */
export class ResponsesStreamConverter {
  private seq = 0;
  private started = false;
  private done = false;
  private open?: OpenItem;
  private reasoningPieces = 0;
  private readonly output: ResponseOutputItem[] = [];
  private readonly calls: ToolCall[] = [];
  private final?: ResponseObject;

  /**
   * @param id the response id (`resp_…`).
   * @param echo the request fields the Response object repeats.
   * @param createdAt Unix seconds.
   */
  constructor(
    readonly id: string,
    private readonly echo: ResponseEcho,
    private readonly createdAt = unixNow(),
  ) {}

  /** Events for one generation event (the opening pair first). */
  process(event: GenerationEvent): ResponseStreamEvent[] {
    if (this.done) return [];
    const out: PendingEvent[] = this.start();
    if (event.thinking) {
      this.reasoningPieces += event.kind === 'delta' ? 1 : 0;
      out.push(...this.delta('reasoning', event.thinking));
    }
    if (event.text) out.push(...this.delta('message', event.text));
    for (const call of event.toolCalls ?? []) out.push(...this.functionCall(call));
    if (event.kind === 'done') out.push(...this.end(event.reason === 'length', event.metrics));
    return out.map((e) => this.number(e));
  }

  /** The closing events when the source completed without a `done` event; [] once done. */
  finish(): ResponseStreamEvent[] {
    return this.done ? [] : this.process({ kind: 'done', reason: 'stop' });
  }

  /**
   * The `error` event for a failure after the stream began (the next sequence number; `code` is the OpenAI error code
   * when there is one, else its type).
   */
  errorEvent(err: unknown): ResponseStreamEvent {
    const { error } = toOpenAIError(err).body;
    return this.number({ type: 'error', code: error.code ?? error.type, message: error.message, param: error.param });
  }

  /** The finished Response object (undefined until the terminal event was produced). */
  get response(): ResponseObject | undefined {
    return this.final;
  }

  /**
   * The output as one domain assistant message (texts and thinking concatenated, tool calls with their `call_…` ids),
   * for a stored conversation.
   */
  assistantMessage(): ChatMessage {
    let content = '';
    let thinking = '';
    for (const item of this.output) {
      if (item.type === 'message') content += item.content.map((c) => c.text).join('');
      if (item.type === 'reasoning') thinking += item.content.map((c) => c.text).join('');
    }
    return {
      role: 'assistant',
      content,
      ...(thinking !== '' ? { thinking } : {}),
      ...(this.calls.length > 0 ? { toolCalls: this.calls } : {}),
    };
  }

  private number(e: PendingEvent): ResponseStreamEvent {
    return { ...e, sequence_number: this.seq++ } as ResponseStreamEvent;
  }

  private snapshot(status: ResponseObject['status'], usage?: ResponseUsage): ResponseObject {
    return {
      id: this.id,
      object: 'response',
      created_at: this.createdAt,
      completed_at: status === 'in_progress' ? null : unixNow(),
      status,
      error: null,
      incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
      output: status === 'in_progress' ? [] : this.output.map((item) => structuredClone(item)),
      ...this.echo,
      access_programs: null,
      background: false,
      max_tool_calls: null,
      service_tier: 'default',
      top_logprobs: 0,
      truncation: 'disabled',
      ...(usage ? { usage } : {}),
    };
  }

  private start(): PendingEvent[] {
    if (this.started) return [];
    this.started = true;
    return [
      { type: 'response.created', response: this.snapshot('in_progress') },
      { type: 'response.in_progress', response: this.snapshot('in_progress') },
    ];
  }

  private delta(kind: OpenItem['kind'], piece: string): PendingEvent[] {
    const out: PendingEvent[] = [];
    if (this.open?.kind !== kind) {
      out.push(...this.closeOpen('completed'));
      out.push(...this.openItem(kind));
    }
    const open = this.open!;
    open.text += piece;
    const ref = { item_id: open.id, output_index: open.index, content_index: 0 };
    out.push(
      kind === 'message'
        ? { type: 'response.output_text.delta', ...ref, delta: piece, logprobs: [] }
        : { type: 'response.reasoning_text.delta', ...ref, delta: piece },
    );
    return out;
  }

  private openItem(kind: OpenItem['kind']): PendingEvent[] {
    const index = this.output.length;
    const id = responsesId(kind === 'message' ? 'msg' : 'rs');
    const item: ResponseOutputItem =
      kind === 'message'
        ? { id, type: 'message', role: 'assistant', status: 'in_progress', content: [] }
        : { id, type: 'reasoning', summary: [], content: [] };
    this.output.push(item);
    this.open = { kind, index, id, text: '' };
    const part =
      kind === 'message'
        ? { type: 'output_text' as const, text: '', annotations: [], logprobs: [] }
        : { type: 'reasoning_text' as const, text: '' };
    return [
      { type: 'response.output_item.added', output_index: index, item: structuredClone(item) },
      { type: 'response.content_part.added', item_id: id, output_index: index, content_index: 0, part },
    ];
  }

  /** Closes the open item: its text `.done`, content_part.done and output_item.done with the final item. */
  private closeOpen(status: 'completed' | 'incomplete'): PendingEvent[] {
    const open = this.open;
    if (!open) return [];
    this.open = undefined;
    const ref = { item_id: open.id, output_index: open.index, content_index: 0 };
    const out: PendingEvent[] = [];
    if (open.kind === 'message') {
      const part = { type: 'output_text' as const, text: open.text, annotations: [], logprobs: [] };
      const item = this.output[open.index] as ResponseOutputMessage;
      item.content = [part];
      item.status = status;
      out.push(
        { type: 'response.output_text.done', ...ref, text: open.text, logprobs: [] },
        { type: 'response.content_part.done', ...ref, part: structuredClone(part) },
      );
    } else {
      const part = { type: 'reasoning_text' as const, text: open.text };
      (this.output[open.index] as ResponseReasoningItem).content = [part];
      out.push(
        { type: 'response.reasoning_text.done', ...ref, text: open.text },
        { type: 'response.content_part.done', ...ref, part: structuredClone(part) },
      );
    }
    out.push({
      type: 'response.output_item.done',
      output_index: open.index,
      item: structuredClone(this.output[open.index]),
    });
    return out;
  }

  private functionCall(call: ToolCall): PendingEvent[] {
    const out = this.closeOpen('completed');
    const callId = responsesId('call');
    const args = JSON.stringify(call.function.arguments);
    this.calls.push({ id: callId, function: { ...call.function, index: this.calls.length } });
    const index = this.output.length;
    const item: ResponseFunctionCall = {
      id: responsesId('fc'),
      type: 'function_call',
      status: 'in_progress',
      call_id: callId,
      name: call.function.name,
      arguments: '',
    };
    this.output.push(item);
    const ref = { item_id: item.id, output_index: index };
    out.push({ type: 'response.output_item.added', output_index: index, item: structuredClone(item) });
    out.push({ type: 'response.function_call_arguments.delta', ...ref, delta: args });
    out.push({ type: 'response.function_call_arguments.done', ...ref, arguments: args });
    item.arguments = args;
    item.status = 'completed';
    out.push({ type: 'response.output_item.done', output_index: index, item: structuredClone(item) });
    return out;
  }

  private end(hitLimit: boolean, metrics: GenerationMetrics | undefined): PendingEvent[] {
    const out = this.closeOpen(hitLimit ? 'incomplete' : 'completed');
    if (this.output.length === 0) {
      out.push(...this.openItem('message'), ...this.closeOpen(hitLimit ? 'incomplete' : 'completed'));
    }
    this.done = true;
    const status = hitLimit ? 'incomplete' : 'completed';
    this.final = this.snapshot(status, toResponseUsage(metrics, this.reasoningPieces));
    out.push({
      type: hitLimit ? 'response.incomplete' : 'response.completed',
      response: structuredClone(this.final),
    });
    return out;
  }
}
