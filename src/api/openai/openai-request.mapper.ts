import { randomBytes } from 'node:crypto';
import { InvalidRequestError } from '../../common/errors';
import { decodeOptions } from '../../common/options';
import { parseCompatKeepAlive } from '../../common/time';
import type {
  ChatCommand,
  ChatMessage,
  EmbedCommand,
  GenerateCommand,
  OutputFormat,
  ToolCall,
  ToolDefinition,
} from '../../generation';
import { decodeLora } from '../ollama/dto/lora-request.dto';
import { decodeInputAudio } from './input-audio';
import { OpenAIChatRequest, OpenAICompletionRequest, OpenAIContentPart, OpenAIEmbeddingRequest } from './openai.types';

/**
 * OpenAI request → domain command (reference/ollama-api.md §12.2–§12.4). Pure; every rejection is an
 * InvalidRequestError (→ 400 `invalid_request_error`) carrying Ollama's compat-middleware text (§5.3) where one
 * exists.
 */

const DATA_URI = /^data:(?:image\/(?:jpeg|jpg|png|webp))?;base64,(.*)$/s;
const REASONING_EFFORTS: Record<string, boolean | string> = {
  none: false,
  minimal: 'low',
  low: 'low',
  medium: 'medium',
  high: 'high',
  max: 'max',
  xhigh: 'max',
  ultra: 'max',
};

/** A fresh tool-call id in OpenAI's style: `call_` + 24 lowercase alphanumerics. */
export function newToolCallId(): string {
  return `call_${randomBytes(12).toString('hex')}`;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Go's `%T` of a decoded JSON value, for `invalid message content type: <go type>`. */
function goType(v: unknown): string {
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'string') return 'string';
  if (Array.isArray(v)) return '[]interface {}';
  if (isObject(v)) return 'map[string]interface {}';
  return '<nil>';
}

/**
 * An `image_url` value (string or `{url}`) → the base64 payload. Only data URIs
 * (`data:image/{jpeg,jpg,png,webp};base64,…` or `data:;base64,…`) are accepted.
 * @throws InvalidRequestError `image URLs are not currently supported, please use base64 encoded data instead`
 *   (http/https), `invalid image input` (anything else).
 */
export function decodeImageUrl(value: unknown): string {
  const url = typeof value === 'string' ? value : isObject(value) ? value.url : undefined;
  if (typeof url !== 'string') throw new InvalidRequestError('invalid image input', 'messages');
  if (/^https?:\/\//i.test(url)) {
    throw new InvalidRequestError(
      'image URLs are not currently supported, please use base64 encoded data instead',
      'messages',
    );
  }
  const m = DATA_URI.exec(url);
  if (!m || m[1] === '') throw new InvalidRequestError('invalid image input', 'messages');
  return m[1];
}

/**
 * OpenAI `tool_calls` of an assistant message → domain calls; `arguments` is JSON text that must decode to an object.
 * @throws InvalidRequestError `invalid tool call arguments`, `invalid message format` (no function name).
 */
export function decodeOpenAIToolCalls(value: unknown): ToolCall[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw new InvalidRequestError('invalid message format', 'messages');
  if (value.length === 0) return undefined;
  return value.map((call: unknown, i): ToolCall => {
    const fn = isObject(call) && isObject(call.function) ? call.function : undefined;
    if (!fn || typeof fn.name !== 'string') throw new InvalidRequestError('invalid message format', 'messages');
    let args: unknown = fn.arguments ?? '{}';
    if (typeof args === 'string') {
      try {
        args = JSON.parse(args === '' ? '{}' : args);
      } catch {
        throw new InvalidRequestError('invalid tool call arguments', 'messages');
      }
    }
    if (!isObject(args)) throw new InvalidRequestError('invalid tool call arguments', 'messages');
    const id = isObject(call) && typeof call.id === 'string' && call.id !== '' ? call.id : undefined;
    return { ...(id ? { id } : {}), function: { index: i, name: fn.name, arguments: args } };
  });
}

/**
 * OpenAI `messages` → domain messages (§12.2). Roles are lower-cased, `developer` becomes `system`. String content
 * is one message; an array of parts becomes one message per part with the same role (Ollama's behaviour): `text`
 * parts carry text, `image_url` parts carry one base64 image and `input_audio` parts one base64 audio file
 * (decodeInputAudio), each with empty text. `content: null` is allowed only with
 * `tool_calls`. `reasoning` / `reasoning_content` on a message become its thinking. A `tool` message takes its tool
 * name from `name` or from the earlier assistant call with the same `tool_call_id`.
 * @throws InvalidRequestError `[] is too short - 'messages'`, `invalid message format`,
 *   `invalid message content type: <go type>`, image, input_audio and tool-call errors.
 */
export function decodeMessages(value: unknown): ChatMessage[] {
  if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) {
    throw new InvalidRequestError("[] is too short - 'messages'", 'messages');
  }
  if (!Array.isArray(value)) throw new InvalidRequestError('invalid message format', 'messages');
  const toolNames = new Map<string, string>();
  const out: ChatMessage[] = [];
  for (const raw of value as unknown[]) {
    if (!isObject(raw) || typeof raw.role !== 'string') {
      throw new InvalidRequestError('invalid message format', 'messages');
    }
    let role = raw.role.toLowerCase();
    if (role === 'developer') role = 'system';
    const toolCalls = decodeOpenAIToolCalls(raw.tool_calls);
    for (const c of toolCalls ?? []) if (c.id) toolNames.set(c.id, c.function.name);
    const reasoning = typeof raw.reasoning === 'string' ? raw.reasoning : raw.reasoning_content;
    const base: Omit<ChatMessage, 'content'> = {
      role,
      ...(typeof reasoning === 'string' && reasoning !== '' ? { thinking: reasoning } : {}),
    };
    if (role === 'tool') {
      const callId = typeof raw.tool_call_id === 'string' ? raw.tool_call_id : undefined;
      const name = typeof raw.name === 'string' && raw.name !== '' ? raw.name : callId && toolNames.get(callId);
      if (name) base.toolName = name;
      if (callId) base.toolCallId = callId;
    }
    const content = raw.content;
    if (typeof content === 'string') {
      out.push({ ...base, content, ...(toolCalls ? { toolCalls } : {}) });
    } else if (Array.isArray(content)) {
      content.forEach((part: unknown, i) => {
        const msg = decodePart(part, base);
        if (i === content.length - 1 && toolCalls) msg.toolCalls = toolCalls;
        out.push(msg);
      });
      if (content.length === 0) out.push({ ...base, content: '', ...(toolCalls ? { toolCalls } : {}) });
    } else if ((content === null || content === undefined) && toolCalls) {
      out.push({ ...base, content: '', toolCalls });
    } else {
      throw new InvalidRequestError(`invalid message content type: ${goType(content)}`, 'messages');
    }
  }
  return out;
}

function decodePart(part: unknown, base: Omit<ChatMessage, 'content'>): ChatMessage {
  const p = (isObject(part) ? part : {}) as OpenAIContentPart;
  switch (p.type) {
    case 'text':
      if (typeof p.text !== 'string') throw new InvalidRequestError('invalid message format', 'messages');
      return { ...base, content: p.text };
    case 'image_url':
      return { ...base, content: '', images: [decodeImageUrl(p.image_url)] };
    case 'input_audio':
      return { ...base, content: '', audio: [decodeInputAudio(p.input_audio, 'messages')] };
    case undefined:
    default:
      throw new InvalidRequestError('invalid message format', 'messages');
  }
}

/**
 * `response_format` → domain format: `json_object` → any JSON object, `json_schema` → its `json_schema.schema`,
 * `text` / absent → free text.
 * @throws InvalidRequestError for another type or a json_schema without an object schema.
 */
export function decodeResponseFormat(value: unknown): OutputFormat | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw new InvalidRequestError('invalid response_format', 'response_format');
  switch (value.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { kind: 'json' };
    case 'json_schema': {
      const spec = value.json_schema;
      const schema = isObject(spec) ? spec.schema : undefined;
      if (!isObject(schema)) {
        throw new InvalidRequestError('response_format.json_schema.schema must be an object', 'response_format');
      }
      return { kind: 'schema', schema };
    }
    default:
      throw new InvalidRequestError(`invalid response_format type: ${JSON.stringify(value.type)}`, 'response_format');
  }
}

/**
 * `stop` → a list of stop strings (a string or an array of strings).
 * @throws InvalidRequestError `invalid type for 'stop' field: <go type>`.
 */
export function decodeStop(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) {
    for (const v of value) {
      if (typeof v !== 'string') throw new InvalidRequestError(`invalid type for 'stop' field: ${goType(v)}`, 'stop');
    }
    return value as string[];
  }
  throw new InvalidRequestError(`invalid type for 'stop' field: ${goType(value)}`, 'stop');
}

/**
 * `reasoning_effort` / `reasoning.effort` → `think` (§12.2): none → false, minimal → low, xhigh/ultra → max.
 * @throws InvalidRequestError `invalid reasoning value: "<v>" (must be …)`.
 */
export function decodeReasoningEffort(value: unknown): boolean | string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string' && value in REASONING_EFFORTS) return REASONING_EFFORTS[value];
  throw new InvalidRequestError(
    `invalid reasoning value: ${JSON.stringify(value)} (must be "minimal", "low", "medium", "high", "xhigh", "ultra", "max", or "none")`,
    'reasoning_effort',
  );
}

/**
 * `tools` + `tool_choice` → definitions (function tools only) and the choice: "none" drops the tools (the model then
 * cannot call), "required" forces a call, `{"type":"function","function":{"name"}}` forces a call of that tool only,
 * "auto"/absent lets the model choose.
 * @throws InvalidRequestError when a named tool_choice names no tool of the request.
 */
function decodeTools(
  tools: unknown,
  toolChoice: unknown,
): { tools?: ToolDefinition[]; toolChoice?: 'auto' | 'required' } {
  if (!Array.isArray(tools) || tools.length === 0 || toolChoice === 'none') return {};
  const defs = (tools as unknown[]).filter(isObject).map((t) => t as ToolDefinition);
  if (toolChoice === 'required') return { tools: defs, toolChoice: 'required' };
  if (isObject(toolChoice) && isObject(toolChoice.function) && typeof toolChoice.function.name === 'string') {
    const name = toolChoice.function.name;
    const named = defs.filter((t) => t.function?.name === name);
    if (named.length === 0) throw new InvalidRequestError(`tool_choice names an unknown tool: ${name}`, 'tool_choice');
    return { tools: named, toolChoice: 'required' };
  }
  return { tools: defs };
}

/**
 * A token limit field (`max_tokens`, `max_completion_tokens`, `max_output_tokens`): a negative number would mean
 * "unbounded" to the native options (num_predict -1), which OpenAI refuses; here it is a 400 naming the field
 * (OpenAI's `integer_below_min_value` wording). 0 is passed on as Ollama does; other types are left to the option
 * decoder's type errors.
 * @returns the value unchanged when acceptable.
 * @throws InvalidRequestError (400 invalid_request_error, `param` = the field).
 */
export function checkTokenLimit(value: unknown, param: string): unknown {
  if (typeof value === 'number' && value < 0) {
    throw new InvalidRequestError(
      `Invalid '${param}': integer below minimum value. Expected a value >= 0, but got ${value} instead.`,
      param,
    );
  }
  return value;
}

/** The sampling fields shared by chat and completions → the native option map (typed by the option table). */
function samplingOptions(req: OpenAIChatRequest | OpenAICompletionRequest, maxTokens: unknown) {
  return decodeOptions({
    num_predict: maxTokens,
    // Ollama's compat layer: temperature and top_p default to 1.0 (overriding the Modelfile), §12.2.
    temperature: req.temperature ?? 1.0,
    top_p: req.top_p === undefined || req.top_p === null || req.top_p === 0 ? 1.0 : req.top_p,
    seed: req.seed,
    frequency_penalty: req.frequency_penalty,
    presence_penalty: req.presence_penalty,
    stop: decodeStop(req.stop),
  });
}

/** `model` must be a string when given (an absent model is left to the service: `model is required`). */
function modelOf(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new InvalidRequestError('model must be a string', 'model');
  return value;
}

/** Whether the client asked for a stream (`stream` defaults to false here, §12.2). */
export function wantsStream(req: { stream?: unknown }): boolean {
  return req.stream === true;
}

/** Whether the client asked for the final usage chunk. */
export function wantsUsage(req: { stream_options?: { include_usage?: unknown } | null }): boolean {
  return isObject(req.stream_options) && req.stream_options.include_usage === true;
}

/**
 * `POST /v1/chat/completions` body → ChatCommand. `max_tokens` (or `max_completion_tokens`) → num_predict. The prompt
 * is never cut (`growContext`: a prompt longer than the loaded context reloads the model with a larger one, up to the
 * trained context, else 400; beyond Ollama, which truncates).
 * @param startedAt process.hrtime.bigint() at handler start.
 * `lora` (beyond OpenAI and Ollama: llama-server's per-request adapters) is validated as on the native routes;
 * `keep_alive` (beyond OpenAI and Ollama's compat layer) is decoded as on the native routes (parseCompatKeepAlive, §4.2).
 * @throws InvalidRequestError (see decodeMessages, decodeResponseFormat, decodeStop, decodeReasoningEffort, decodeLora,
 *   parseCompatKeepAlive (`param: "keep_alive"`);
 *   `top_logprobs must be between 0 and 20`; option type errors).
 */
export function fromOpenAIChatRequest(body: unknown, startedAt: bigint): ChatCommand {
  if (!isObject(body)) throw new InvalidRequestError('invalid request body');
  const req = body as OpenAIChatRequest;
  const top = req.top_logprobs;
  if (top !== undefined && top !== null && (typeof top !== 'number' || top < 0 || top > 20)) {
    throw new InvalidRequestError('top_logprobs must be between 0 and 20', 'top_logprobs');
  }
  const effort = isObject(req.reasoning) ? req.reasoning.effort : req.reasoning_effort;
  const think = decodeReasoningEffort(effort);
  const { tools, toolChoice } = decodeTools(req.tools, req.tool_choice);
  const lora = decodeLora(req.lora);
  const keepAliveMs = parseCompatKeepAlive(req.keep_alive);
  return {
    model: modelOf(req.model),
    messages: decodeMessages(req.messages),
    ...(tools ? { tools } : {}),
    ...(toolChoice ? { toolChoice } : {}),
    format: decodeResponseFormat(req.response_format),
    ...(think !== undefined ? { think } : {}),
    topLogprobs: req.logprobs === true ? ((top as number | undefined) ?? 0) : undefined,
    options: samplingOptions(
      req,
      checkTokenLimit(req.max_tokens, 'max_tokens') ??
        checkTokenLimit(req.max_completion_tokens, 'max_completion_tokens'),
    ),
    growContext: true,
    ...(lora ? { lora } : {}),
    ...(keepAliveMs !== undefined ? { keepAliveMs } : {}),
    startedAt,
  };
}

/** One prompt of a /v1/completions request: text, or token ids of the model's vocabulary. */
export type CompletionPrompt = { text: string } | { tokens: number[] };

const PROMPT_FORMS = 'a string, an array of strings, an array of token ids, or an array of token-id arrays';

/** Whether `v` is a token id: an integer in 0..2³¹−1 (the engine's int32 ids; the vocabulary bound is checked on load). */
function isTokenId(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0x7fffffff;
}

/**
 * The `prompt` of a /v1/completions request (OpenAI's legacy Completions API: "The prompt(s) to generate completions
 * for, encoded as a string, array of strings, array of tokens, or array of token arrays") → the prompts, one choice
 * each, in order. Absent/null is one empty prompt (Ollama: the model is only loaded).
 * @throws InvalidRequestError (400, `param: "prompt"`): `prompt must be <forms>` for another type or an array mixing
 *   forms, `prompt must not be an empty array`, `prompt[<i>] must not be an empty array` (an empty token array),
 *   `prompt token ids must be non-negative integers`.
 */
export function decodeCompletionPrompt(value: unknown): CompletionPrompt[] {
  if (value === undefined || value === null) return [{ text: '' }];
  if (typeof value === 'string') return [{ text: value }];
  if (!Array.isArray(value)) throw new InvalidRequestError(`prompt must be ${PROMPT_FORMS}`, 'prompt');
  if (value.length === 0) throw new InvalidRequestError('prompt must not be an empty array', 'prompt');
  const items = value as unknown[];
  if (items.every((v) => typeof v === 'string')) return (items as string[]).map((text) => ({ text }));
  if (items.every((v) => typeof v === 'number')) {
    if (!items.every(isTokenId)) {
      throw new InvalidRequestError('prompt token ids must be non-negative integers', 'prompt');
    }
    return [{ tokens: items as number[] }];
  }
  if (items.every((v) => Array.isArray(v))) {
    return (items as unknown[][]).map((ids, i) => {
      if (ids.length === 0) throw new InvalidRequestError(`prompt[${i}] must not be an empty array`, 'prompt');
      if (!ids.every((v) => typeof v === 'number')) {
        throw new InvalidRequestError(`prompt must be ${PROMPT_FORMS} (prompt[${i}] is not token ids)`, 'prompt');
      }
      if (!ids.every(isTokenId)) {
        throw new InvalidRequestError('prompt token ids must be non-negative integers', 'prompt');
      }
      return { tokens: ids as number[] };
    });
  }
  throw new InvalidRequestError(`prompt must be ${PROMPT_FORMS}, not an array mixing them`, 'prompt');
}

/**
 * `POST /v1/completions` body → one GenerateCommand per prompt (§12.3; `prompt` forms in decodeCompletionPrompt),
 * in choice-index order; every command shares the other fields. Token prompts carry `promptTokens` (the model
 * detokenizes them, then they are used like text). `logprobs: n` (n > 0) asks for n alternatives per token. The
 * prompt is never cut (`growContext`, as chat).
 * `lora` and `keep_alive` as on /v1/chat/completions.
 * @throws InvalidRequestError the prompt errors above, `suffix must be a string`, stop/option/`lora`/`keep_alive`
 *   errors.
 */
export function fromOpenAICompletionRequest(body: unknown, startedAt: bigint): GenerateCommand[] {
  if (!isObject(body)) throw new InvalidRequestError('invalid request body');
  const req = body as OpenAICompletionRequest;
  const prompts = decodeCompletionPrompt(req.prompt);
  if (req.suffix !== undefined && req.suffix !== null && typeof req.suffix !== 'string') {
    throw new InvalidRequestError('suffix must be a string', 'suffix');
  }
  const n = req.logprobs;
  const lora = decodeLora(req.lora);
  const keepAliveMs = parseCompatKeepAlive(req.keep_alive);
  const base: Omit<GenerateCommand, 'prompt'> = {
    model: modelOf(req.model),
    suffix: (req.suffix as string | null | undefined) || undefined,
    raw: false,
    topLogprobs: typeof n === 'number' && n > 0 ? Math.min(20, Math.floor(n)) : undefined,
    options: samplingOptions(req, checkTokenLimit(req.max_tokens, 'max_tokens')),
    growContext: true,
    ...(lora ? { lora } : {}),
    ...(keepAliveMs !== undefined ? { keepAliveMs } : {}),
    startedAt,
  };
  return prompts.map((p) =>
    'text' in p ? { ...base, prompt: p.text } : { ...base, prompt: '', promptTokens: p.tokens },
  );
}

/** A decoded embeddings request: the command plus how to encode the vectors. */
export interface DecodedEmbeddingRequest {
  command: EmbedCommand;
  encoding: 'float' | 'base64';
}

/**
 * `POST /v1/embeddings` body → EmbedCommand (§12.4): `input` a string (`""` embeds one empty text) or a non-empty
 * array of strings; `encoding_format` float (default) or base64; `dimensions` > 0 cuts and re-normalizes;
 * `keep_alive` as on /v1/chat/completions.
 * @throws InvalidRequestError `invalid input`, parseCompatKeepAlive's errors,
 *   `Invalid value for 'encoding_format' = <v>. Supported values: ['float', 'base64'].`, `dimensions` errors.
 */
export function fromOpenAIEmbeddingRequest(body: unknown, startedAt: bigint): DecodedEmbeddingRequest {
  if (!isObject(body)) throw new InvalidRequestError('invalid request body');
  const req = body as OpenAIEmbeddingRequest;
  const input = req.input;
  let texts: string[];
  if (typeof input === 'string') texts = [input];
  else if (Array.isArray(input) && input.length > 0 && input.every((v) => typeof v === 'string')) texts = input;
  else throw new InvalidRequestError('invalid input', 'input');
  const enc = req.encoding_format ?? 'float';
  if (enc !== 'float' && enc !== 'base64') {
    throw new InvalidRequestError(
      `Invalid value for 'encoding_format' = ${String(enc)}. Supported values: ['float', 'base64'].`,
      'encoding_format',
    );
  }
  const dims = req.dimensions;
  if (dims !== undefined && dims !== null && (typeof dims !== 'number' || !Number.isInteger(dims) || dims < 0)) {
    throw new InvalidRequestError('dimensions must be a non-negative integer', 'dimensions');
  }
  const keepAliveMs = parseCompatKeepAlive(req.keep_alive);
  return {
    command: {
      model: modelOf(req.model),
      input: texts,
      truncate: true,
      dimensions: (dims as number | null | undefined) ?? undefined,
      options: {},
      ...(keepAliveMs !== undefined ? { keepAliveMs } : {}),
      startedAt,
    },
    encoding: enc,
  };
}
