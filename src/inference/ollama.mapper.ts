import { OperatorFunction, reduce } from 'rxjs';
import { InvalidRequestError } from '../common/errors';
import { decodeOptions } from '../common/options';
import { parseKeepAlive } from '../common/time';
import { ChatRequestDto } from './dto/chat-request.dto';
import { GenerateRequestDto } from './dto/generate-request.dto';
import { ChatResponseWire, GenerateResponseWire, MetricsWire } from './dto/generation-response.dto';
import { ChatCommand, GenerateCommand, GenerationEvent, GenerationMetrics } from './generation.types';

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

/** Normalises `format`: `null` and `""` mean unset (§3.2). */
function decodeFormat(value: unknown): unknown {
  return value === null || value === '' ? undefined : value;
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
    format: decodeFormat(dto.format),
    think: decodeThink(dto.think),
    options: decodeOptions(dto.options),
    keepAliveMs: parseKeepAlive(dto.keep_alive),
    startedAt,
  };
}

/**
 * ChatRequestDto → ChatCommand. Roles are lower-cased; an absent content is "".
 * @throws InvalidRequestError as fromGenerateRequest, plus a message without a role.
 */
export function fromChatRequest(dto: ChatRequestDto, startedAt: bigint): ChatCommand {
  checkTopLogprobs(dto.top_logprobs);
  const messages = (dto.messages ?? []).map((m, i) => {
    if (!m.role) throw new InvalidRequestError(`messages[${i}].role is required`, `messages.${i}.role`);
    return {
      role: m.role.toLowerCase(),
      content: m.content ?? '',
      ...(m.images && m.images.length > 0 ? { images: m.images } : {}),
    };
  });
  return {
    model: dto.model ?? '',
    messages,
    tools: dto.tools ?? undefined,
    format: decodeFormat(dto.format),
    think: decodeThink(dto.think),
    options: decodeOptions(dto.options),
    keepAliveMs: parseKeepAlive(dto.keep_alive),
    startedAt,
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

/**
 * One /api/generate NDJSON chunk (reference/ollama-api.md §12.1): deltas carry `response`; the final chunk has
 * `response: ""`, `done: true`, `done_reason`, `context` (not raw) and the metrics.
 */
export function toGenerateChunk(model: string, event: GenerationEvent): GenerateResponseWire {
  if (event.kind === 'delta') return { model, created_at: now(), response: event.text, done: false };
  return {
    model,
    created_at: now(),
    response: '',
    done: true,
    done_reason: event.reason,
    ...(event.context ? { context: event.context } : {}),
    ...toMetricsWire(event.metrics),
  };
}

/** One /api/chat NDJSON chunk: deltas carry `message.content`; the final chunk has empty content and the metrics. */
export function toChatChunk(model: string, event: GenerationEvent): ChatResponseWire {
  if (event.kind === 'delta') {
    return { model, created_at: now(), message: { role: 'assistant', content: event.text }, done: false };
  }
  return {
    model,
    created_at: now(),
    message: { role: 'assistant', content: '' },
    done: true,
    done_reason: event.reason,
    ...toMetricsWire(event.metrics),
  };
}

/** `stream: false` for generate: concatenates the deltas into `response`; the rest from the final event. */
export function toGenerateResponse(model: string): OperatorFunction<GenerationEvent, GenerateResponseWire> {
  return (source) =>
    source.pipe(
      reduce(
        (acc, event) => {
          if (event.kind === 'delta') return { ...acc, response: acc.response + event.text };
          return { ...toGenerateChunk(model, event), response: acc.response };
        },
        { model, created_at: now(), response: '', done: false } as GenerateResponseWire,
      ),
    );
}

/** `stream: false` for chat: concatenates the deltas into `message.content`; the rest from the final event. */
export function toChatResponse(model: string): OperatorFunction<GenerationEvent, ChatResponseWire> {
  return (source) =>
    source.pipe(
      reduce(
        (acc, event) => {
          if (event.kind === 'delta') {
            return { ...acc, message: { role: 'assistant' as const, content: acc.message.content + event.text } };
          }
          return {
            ...toChatChunk(model, event),
            message: { role: 'assistant' as const, content: acc.message.content },
          };
        },
        { model, created_at: now(), message: { role: 'assistant', content: '' }, done: false } as ChatResponseWire,
      ),
    );
}
