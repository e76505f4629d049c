import { map, OperatorFunction, reduce } from 'rxjs';
import { InvalidRequestError } from '../../common/errors';
import { decodeOptions } from '../../common/options';
import { parseKeepAlive } from '../../common/time';
import { ChatRequestDto } from './dto/chat-request.dto';
import { GenerateRequestDto } from './dto/generate-request.dto';
import { toLoraSelection } from './dto/lora-request.dto';
import {
  ChatMessageWire,
  ChatResponseWire,
  GenerateResponseWire,
  LogprobWire,
  MetricsWire,
  ToolCallWire,
} from './dto/generation-response.dto';
import {
  decodeFormat,
  ChatCommand,
  ChatMessage,
  GenerateCommand,
  GenerationEvent,
  GenerationMetrics,
  Logprob,
  ToolCall,
  ToolDefinition,
} from '../../generation';

/**
 * Wire ↔ domain mapping of the native generate/chat API (Ollama's FromChatRequest / ToChunk idea): `fromXxx`
 * decodes a validated DTO into a command (decoding keep_alive, options and think with Ollama's error texts),
 * `toXxx` turns domain events into wire chunks.
 */

const THINK_LEVELS = ['high', 'medium', 'low', 'max'];

/**
 * Validates `think` (reference/ollama-api.md §4.3): booleans, or one of the level strings.
 * @throws InvalidRequestError `invalid think value: "<v>" (must be "high", "medium", "low", "max", true, or false)`
 *   or `think must be a boolean or string (...)`.
 */
export function decodeThink(value: unknown): boolean | string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    if (THINK_LEVELS.includes(value)) return value;
    throw new InvalidRequestError(
      `invalid think value: ${JSON.stringify(value)} (must be "high", "medium", "low", "max", true, or false)`,
      'think',
    );
  }
  throw new InvalidRequestError(
    'think must be a boolean or string ("high", "medium", "low", "max", true, or false)',
    'think',
  );
}

/** `top_logprobs` must be within 0..20 (§5.2). */
function checkTopLogprobs(value: number | undefined): void {
  if (value !== undefined && (value < 0 || value > 20)) {
    throw new InvalidRequestError('top_logprobs must be between 0 and 20', 'top_logprobs');
  }
}

/** `logprobs` + `top_logprobs` → alternatives per token, or undefined when logprobs were not asked for. */
function decodeLogprobs(logprobs: boolean | undefined, top: number | undefined): number | undefined {
  return logprobs ? (top ?? 0) : undefined;
}

/**
 * Wire `tool_calls` of a message → domain tool calls. `arguments` may arrive as an object or as JSON text (OpenAI
 * style); `index` defaults to the position.
 * @throws InvalidRequestError when a call has no function name.
 */
export function decodeToolCalls(calls: Record<string, unknown>[] | undefined, where: string): ToolCall[] | undefined {
  if (!calls || calls.length === 0) return undefined;
  return calls.map((call, i) => {
    const fn = (call.function ?? {}) as Record<string, unknown>;
    if (typeof fn.name !== 'string') {
      throw new InvalidRequestError(`${where}.tool_calls[${i}].function.name is required`, `${where}.tool_calls`);
    }
    let args: unknown = fn.arguments ?? {};
    if (typeof args === 'string') {
      try {
        args = JSON.parse(args);
      } catch {
        args = {};
      }
    }
    return {
      ...(typeof call.id === 'string' && call.id !== '' ? { id: call.id } : {}),
      function: {
        index: typeof fn.index === 'number' ? fn.index : i,
        name: fn.name,
        arguments:
          typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {},
      },
    };
  });
}

/**
 * The fields generate and chat decode alike: format, think, truncate, shift, logprobs, options, keep_alive, and
 * llamad's `lora` (validated by the DTO; beyond Ollama).
 * @throws InvalidRequestError for an invalid format, think, logprobs, options or keep_alive value.
 */
function commonFields(
  dto: GenerateRequestDto | ChatRequestDto,
  startedAt: bigint,
): Pick<
  GenerateCommand,
  'format' | 'think' | 'truncate' | 'shift' | 'topLogprobs' | 'options' | 'keepAliveMs' | 'startedAt' | 'lora'
> {
  const lora = toLoraSelection(dto.lora);
  return {
    format: decodeFormat(dto.format),
    think: decodeThink(dto.think),
    truncate: dto.truncate ?? undefined,
    shift: dto.shift ?? undefined,
    topLogprobs: decodeLogprobs(dto.logprobs, dto.top_logprobs),
    options: decodeOptions(dto.options),
    keepAliveMs: parseKeepAlive(dto.keep_alive),
    ...(lora ? { lora } : {}),
    startedAt,
  };
}

/**
 * GenerateRequestDto → GenerateCommand.
 * @param startedAt process.hrtime.bigint() at handler start.
 * @throws InvalidRequestError for keep_alive, options, think or top_logprobs values Ollama rejects.
 */
export function fromGenerateRequest(dto: GenerateRequestDto, startedAt: bigint): GenerateCommand {
  checkTopLogprobs(dto.top_logprobs);
  return {
    model: dto.model ?? '',
    prompt: dto.prompt ?? '',
    suffix: dto.suffix || undefined,
    system: dto.system || undefined,
    template: dto.template || undefined,
    context: dto.context ?? undefined,
    raw: dto.raw ?? false,
    images: dto.images ?? undefined,
    ...(dto.audio && dto.audio.length > 0 ? { audio: dto.audio } : {}),
    ...commonFields(dto, startedAt),
  };
}

/**
 * ChatRequestDto → ChatCommand. Roles are lower-cased; an absent content is "".
 * @throws InvalidRequestError as fromGenerateRequest, plus a message without a role.
 */
export function fromChatRequest(dto: ChatRequestDto, startedAt: bigint): ChatCommand {
  checkTopLogprobs(dto.top_logprobs);
  const messages = (dto.messages ?? []).map((m, i): ChatMessage => {
    if (!m.role) throw new InvalidRequestError(`messages[${i}].role is required`, `messages.${i}.role`);
    const toolCalls = decodeToolCalls(m.tool_calls, `messages[${i}]`);
    return {
      role: m.role.toLowerCase(),
      content: m.content ?? '',
      ...(m.images && m.images.length > 0 ? { images: m.images } : {}),
      ...(m.audio && m.audio.length > 0 ? { audio: m.audio } : {}),
      ...(m.thinking ? { thinking: m.thinking } : {}),
      ...(toolCalls ? { toolCalls } : {}),
      ...(m.tool_name ? { toolName: m.tool_name } : {}),
      ...(m.tool_call_id ? { toolCallId: m.tool_call_id } : {}),
    };
  });
  return {
    model: dto.model ?? '',
    messages,
    tools: dto.tools && dto.tools.length > 0 ? (dto.tools as ToolDefinition[]) : undefined,
    ...commonFields(dto, startedAt),
  };
}

/** Metrics on the wire: nanoseconds and counts, zero values omitted (Go `omitempty`). */
export function toMetricsWire(metrics: GenerationMetrics | undefined): MetricsWire {
  if (!metrics) return {};
  const out: MetricsWire = {};
  const set = (key: keyof MetricsWire, value: number) => {
    const n = Math.max(0, Math.round(value));
    if (n !== 0) out[key] = n;
  };
  set('total_duration', metrics.totalDurationNs);
  set('load_duration', metrics.loadDurationNs);
  set('prompt_eval_count', metrics.promptEvalCount);
  set('prompt_eval_duration', metrics.promptEvalDurationNs);
  set('eval_count', metrics.evalCount);
  set('eval_duration', metrics.evalDurationNs);
  return out;
}

/** RFC 3339 UTC timestamp of now (`…Z`). */
function now(): string {
  return new Date().toISOString();
}

/** Domain tool calls → wire (`id` omitted when empty). */
function toToolCallsWire(calls: ToolCall[] | undefined): { tool_calls?: ToolCallWire[] } {
  if (!calls || calls.length === 0) return {};
  return {
    tool_calls: calls.map((c) => ({
      ...(c.id ? { id: c.id } : {}),
      function: { index: c.function.index, name: c.function.name, arguments: c.function.arguments },
    })),
  };
}

/** Domain logprobs → wire (`top_logprobs` omitted when empty). */
function toLogprobsWire(logprobs: Logprob[] | undefined): { logprobs?: LogprobWire[] } {
  if (!logprobs || logprobs.length === 0) return {};
  return {
    logprobs: logprobs.map((l) => ({
      token: l.token,
      logprob: l.logprob,
      bytes: l.bytes,
      ...(l.topLogprobs.length > 0
        ? { top_logprobs: l.topLogprobs.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })) }
        : {}),
    })),
  };
}

/**
 * One /api/generate NDJSON chunk (reference/ollama-api.md §12.1): deltas carry `response` (and `thinking`,
 * `logprobs` when present); the final chunk has the text the parser released last (usually ""), `done: true`,
 * `done_reason`, `context` (not raw), tool calls found at the end, and the metrics.
 */
export function toGenerateChunk(model: string, event: GenerationEvent): GenerateResponseWire {
  if (event.kind === 'delta') {
    return {
      model,
      created_at: now(),
      response: event.text,
      ...(event.thinking ? { thinking: event.thinking } : {}),
      done: false,
      ...toToolCallsWire(event.toolCalls),
      ...toLogprobsWire(event.logprobs),
    };
  }
  return {
    model,
    created_at: now(),
    response: event.text ?? '',
    ...(event.thinking ? { thinking: event.thinking } : {}),
    done: true,
    done_reason: event.reason,
    ...(event.context ? { context: event.context } : {}),
    ...toToolCallsWire(event.toolCalls),
    ...toMetricsWire(event.metrics),
  };
}

/** The `message` of a chat chunk for an event. */
function chatMessage(event: GenerationEvent): ChatMessageWire {
  return {
    role: 'assistant',
    content: event.text ?? '',
    ...(event.thinking ? { thinking: event.thinking } : {}),
    ...toToolCallsWire(event.toolCalls),
  };
}

/**
 * One /api/chat NDJSON chunk: `message.content` / `message.thinking` (thinking chunks have content ""),
 * `message.tool_calls` as soon as parsed (rendered mode) or on the final chunk (native mode), `logprobs`; the final
 * chunk has `done_reason` and the metrics.
 */
export function toChatChunk(model: string, event: GenerationEvent): ChatResponseWire {
  if (event.kind === 'delta') {
    return { model, created_at: now(), message: chatMessage(event), done: false, ...toLogprobsWire(event.logprobs) };
  }
  return {
    model,
    created_at: now(),
    message: chatMessage(event),
    done: true,
    done_reason: event.reason,
    ...toMetricsWire(event.metrics),
  };
}

/** Accumulates the non-streaming answer: text, thinking, tool calls and logprobs of every event, in order. */
class Accumulator {
  text = '';
  thinking = '';
  toolCalls: ToolCall[] = [];
  logprobs: Logprob[] = [];

  add(event: GenerationEvent): void {
    this.text += event.text ?? '';
    this.thinking += event.thinking ?? '';
    this.toolCalls.push(...(event.toolCalls ?? []));
    if (event.kind === 'delta') this.logprobs.push(...(event.logprobs ?? []));
  }
}

/** Folds a generation into one Accumulator, keeping the final (`done`) event for the metrics. */
function accumulate(): OperatorFunction<GenerationEvent, Accumulator & { final?: GenerationEvent }> {
  return reduce(
    (acc, event) => {
      acc.add(event);
      if (event.kind === 'done') acc.final = event;
      return acc;
    },
    Object.assign(new Accumulator(), { final: undefined as GenerationEvent | undefined }),
  );
}

/**
 * `stream: false` for generate: one object with `response`/`thinking` concatenated, `tool_calls` and `logprobs`
 * concatenated, the rest from the final event (§3.2).
 */
export function toGenerateResponse(model: string): OperatorFunction<GenerationEvent, GenerateResponseWire> {
  return (source) =>
    source.pipe(
      accumulate(),
      map((acc) => {
        const final = acc.final ?? ({ kind: 'done', reason: 'stop' } as GenerationEvent);
        return {
          ...toGenerateChunk(model, final),
          response: acc.text,
          ...(acc.thinking ? { thinking: acc.thinking } : {}),
          ...toToolCallsWire(acc.toolCalls),
          ...toLogprobsWire(acc.logprobs),
        };
      }),
    );
}

/**
 * `stream: false` for chat: `message.content`/`thinking` concatenated, `tool_calls` and `logprobs` concatenated,
 * the rest from the final event (§3.3).
 */
export function toChatResponse(model: string): OperatorFunction<GenerationEvent, ChatResponseWire> {
  return (source) =>
    source.pipe(
      accumulate(),
      map((acc) => {
        const final = acc.final ?? ({ kind: 'done', reason: 'stop' } as GenerationEvent);
        const chunk = toChatChunk(model, final);
        return {
          ...chunk,
          message: {
            role: 'assistant' as const,
            content: acc.text,
            ...(acc.thinking ? { thinking: acc.thinking } : {}),
            ...toToolCallsWire(acc.toolCalls),
          },
          ...toLogprobsWire(acc.logprobs),
        };
      }),
    );
}
