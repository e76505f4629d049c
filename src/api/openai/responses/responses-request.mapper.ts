import { InvalidRequestError } from '../../../common/errors';
import { decodeOptions } from '../../../common/options';
import { parseCompatKeepAlive } from '../../../common/time';
import type { ChatCommand, ChatMessage, OutputFormat, ToolDefinition } from '../../../generation';
import { checkTokenLimit } from '../openai-request.mapper';
import { decodeInput } from './responses-input.mapper';
import { ResponseEcho, ResponseFunctionTool, ResponsesRequest, ResponseTextFormat } from './responses.types';

/**
 * `POST /v1/responses` body → ChatCommand plus the fields the Response object echoes (reference/ollama-api.md §12.6;
 * the chat-completions mapping of src/api/openai where the fields mean the same). Pure; every rejection is an
 * InvalidRequestError (400 `invalid_request_error` with the field as `param`). Fields this layer does not read
 * (`include`, `truncation`, `service_tier`, `stream_options`, `prompt_cache_key`, …) are accepted and ignored.
 */

type Json = Record<string, unknown>;

/** `reasoning.effort` → native `think`: none/minimal → off, low/medium/high as is, xhigh/max → max. */
const EFFORTS: Record<string, boolean | string> = {
  none: false,
  minimal: false,
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'max',
  max: 'max',
};

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function typeError(param: string, expected: string): InvalidRequestError {
  return new InvalidRequestError(`invalid type for '${param}': expected ${expected}`, param);
}

/** An optional field of a given JSON type: undefined when absent or null. */
function optional<T>(body: Json, param: string, kind: 'string' | 'boolean' | 'number'): T | undefined {
  const v = body[param];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== kind) throw typeError(param, `a ${kind}`);
  return v as T;
}

/**
 * `previous_response_id` of a body (read first: the caller looks the id up before decoding the rest).
 * @throws InvalidRequestError when it is not a string.
 */
export function previousResponseIdOf(body: unknown): string | undefined {
  return isObject(body) ? optional<string>(body, 'previous_response_id', 'string') : undefined;
}

/** Whether the client asked for server-sent events (`stream: true`; default false). */
export function wantsResponsesStream(body: unknown): boolean {
  return isObject(body) && body.stream === true;
}

/**
 * Flat function tools → domain definitions plus their echo; other tool types (web_search, file_search, mcp,
 * namespace, custom, …) are echoed but not offered to the model.
 * @throws InvalidRequestError `invalid type for 'tools'`, `function tools need a string name`.
 */
function decodeTools(value: unknown): { defs: ToolDefinition[]; echo: unknown[] } {
  if (value === undefined || value === null) return { defs: [], echo: [] };
  if (!Array.isArray(value)) throw typeError('tools', 'an array');
  const defs: ToolDefinition[] = [];
  const echo: unknown[] = [];
  for (const t of value as unknown[]) {
    if (!isObject(t)) throw typeError('tools', 'an array of objects');
    if (t.type !== 'function') {
      echo.push(t);
      continue;
    }
    if (typeof t.name !== 'string' || t.name === '') {
      throw new InvalidRequestError('function tools need a string name', 'tools');
    }
    const description = typeof t.description === 'string' ? t.description : undefined;
    const parameters = isObject(t.parameters) ? t.parameters : null;
    defs.push({
      type: 'function',
      function: { name: t.name, ...(description !== undefined ? { description } : {}), parameters: parameters ?? {} },
    });
    const tool: ResponseFunctionTool = {
      type: 'function',
      name: t.name,
      ...(description !== undefined ? { description } : {}),
      parameters,
      strict: typeof t.strict === 'boolean' ? t.strict : null,
    };
    echo.push(tool);
  }
  return { defs, echo };
}

/**
 * `tool_choice` over the function tools, as the chat layer maps it: "none" drops the tools, "auto"/absent lets the
 * model choose, "required" forces a call, `{type:"function", name}` forces that tool only, `{type:"allowed_tools",
 * mode, tools:[{type:"function", name}]}` keeps those tools (mode "required" forces a call).
 * @throws InvalidRequestError `tool_choice names an unknown tool: <n>`, `invalid tool_choice`.
 */
function applyToolChoice(
  defs: ToolDefinition[],
  choice: unknown,
): { tools?: ToolDefinition[]; toolChoice?: 'auto' | 'required' } {
  if (choice === undefined || choice === null || choice === 'auto') return defs.length > 0 ? { tools: defs } : {};
  if (choice === 'none') return {};
  if (choice === 'required') return defs.length > 0 ? { tools: defs, toolChoice: 'required' } : {};
  if (isObject(choice) && choice.type === 'function' && typeof choice.name === 'string') {
    const name = choice.name;
    const named = defs.filter((t) => t.function?.name === name);
    if (named.length === 0) throw new InvalidRequestError(`tool_choice names an unknown tool: ${name}`, 'tool_choice');
    return { tools: named, toolChoice: 'required' };
  }
  if (isObject(choice) && choice.type === 'allowed_tools' && Array.isArray(choice.tools)) {
    const names = new Set(
      (choice.tools as unknown[]).map((t) => (isObject(t) && typeof t.name === 'string' ? t.name : undefined)),
    );
    const allowed = defs.filter((t) => names.has(t.function?.name));
    if (allowed.length === 0) return {};
    return { tools: allowed, ...(choice.mode === 'required' ? { toolChoice: 'required' as const } : {}) };
  }
  if (isObject(choice) && typeof choice.type === 'string') return defs.length > 0 ? { tools: defs } : {};
  throw new InvalidRequestError('invalid tool_choice', 'tool_choice');
}

/**
 * `text` → the output format and its echo: `{format:{type:"json_schema", name, schema, strict}}` → that schema,
 * `{type:"json_object"}` → any JSON object, `{type:"text"}`/absent → free text. `verbosity` is echoed only.
 * @throws InvalidRequestError `invalid type for 'text'`, `text.format.schema must be an object`,
 *   `invalid text.format type: <t>`.
 */
function decodeText(value: unknown): { format?: OutputFormat; echo: ResponseEcho['text'] } {
  if (value === undefined || value === null) return { echo: { format: { type: 'text' } } };
  if (!isObject(value)) throw typeError('text', 'an object');
  const v = value.verbosity;
  const verbosity: Pick<ResponseEcho['text'], 'verbosity'> =
    v === 'low' || v === 'medium' || v === 'high' ? { verbosity: v } : {};
  const f = value.format;
  if (f === undefined || f === null) return { echo: { format: { type: 'text' }, ...verbosity } };
  if (!isObject(f)) throw typeError('text.format', 'an object');
  switch (f.type) {
    case 'text':
      return { echo: { format: { type: 'text' }, ...verbosity } };
    case 'json_object':
      return { format: { kind: 'json' }, echo: { format: { type: 'json_object' }, ...verbosity } };
    case 'json_schema': {
      if (!isObject(f.schema)) throw new InvalidRequestError('text.format.schema must be an object', 'text.format');
      const format: ResponseTextFormat = {
        type: 'json_schema',
        name: typeof f.name === 'string' ? f.name : 'response',
        schema: f.schema,
        ...(typeof f.description === 'string' ? { description: f.description } : {}),
        strict: typeof f.strict === 'boolean' ? f.strict : null,
      };
      return { format: { kind: 'schema', schema: f.schema }, echo: { format, ...verbosity } };
    }
    default:
      throw new InvalidRequestError(`invalid text.format type: ${JSON.stringify(f.type)}`, 'text.format');
  }
}

/**
 * `reasoning` → `think` and its echo (`summary` / `generate_summary` are echoed, never generated).
 * @throws InvalidRequestError `invalid type for 'reasoning'`, `invalid reasoning effort: "<v>" (must be …)`.
 */
function decodeReasoning(value: unknown): { think?: boolean | string; echo: ResponseEcho['reasoning'] } {
  if (value === undefined || value === null) return { echo: null };
  if (!isObject(value)) throw typeError('reasoning', 'an object');
  const effort = value.effort;
  const summary = value.summary ?? value.generate_summary;
  const echo = {
    effort: typeof effort === 'string' ? effort : null,
    summary: typeof summary === 'string' ? summary : null,
  };
  if (effort === undefined || effort === null) return { echo };
  if (typeof effort !== 'string' || !(effort in EFFORTS)) {
    throw new InvalidRequestError(
      `invalid reasoning effort: ${JSON.stringify(effort)} ` +
        '(must be "none", "minimal", "low", "medium", "high", "xhigh" or "max")',
      'reasoning.effort',
    );
  }
  return { think: EFFORTS[effort], echo };
}

/** `metadata`: an object of string values (echoed only). @throws InvalidRequestError otherwise. */
function decodeMetadata(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isObject(value) || !Object.values(value).every((v) => typeof v === 'string')) {
    throw typeError('metadata', 'an object of string values');
  }
  return value as Record<string, string>;
}

/** A decoded request: the command to run and what the Response object echoes. */
export interface DecodedResponsesRequest {
  /** messages = instructions (as a system message) + `prior` + the decoded input. */
  command: ChatCommand;
  /** The decoded `input` alone (what a stored response adds to its conversation). */
  input: ChatMessage[];
  echo: ResponseEcho;
  stream: boolean;
}

/**
 * Decodes a `POST /v1/responses` body. `max_output_tokens` → num_predict; `temperature` defaults to 1.0 (as Ollama,
 * overriding the Modelfile), `top_p` is passed only when given; the prompt is never cut (`growContext`: a prompt
 * longer than the loaded context reloads the model with a larger one, else 400); `keep_alive` (beyond OpenAI and
 * Ollama's compat layer) as on the native routes (parseCompatKeepAlive, reference/ollama-api.md §4.2).
 * @param prior the stored conversation of `previous_response_id` (after `instructions`, before `input`).
 * @param startedAt process.hrtime.bigint() at handler start.
 * @throws InvalidRequestError `invalid request body`, type errors of known fields, input/tool/format/reasoning errors,
 *   `input is required` (nothing to answer), option type errors, parseCompatKeepAlive's (`param: "keep_alive"`).
 */
export function decodeResponsesRequest(
  body: unknown,
  prior: readonly ChatMessage[],
  startedAt: bigint,
): DecodedResponsesRequest {
  if (!isObject(body)) throw new InvalidRequestError('invalid request body');
  const req = body as ResponsesRequest & Json;
  const model = optional<string>(req, 'model', 'string') ?? '';
  const instructions = optional<string>(req, 'instructions', 'string');
  const maxOutput = checkTokenLimit(optional<number>(req, 'max_output_tokens', 'number'), 'max_output_tokens') as
    | number
    | undefined;
  const temperature = optional<number>(req, 'temperature', 'number');
  const topP = optional<number>(req, 'top_p', 'number');
  const store = optional<boolean>(req, 'store', 'boolean');
  const parallel = optional<boolean>(req, 'parallel_tool_calls', 'boolean');
  const user = optional<string>(req, 'user', 'string');
  const input = decodeInput(req.input, prior);
  const messages = [...(instructions ? [{ role: 'system', content: instructions }] : []), ...prior, ...input];
  if (input.length === 0 && prior.length === 0) throw new InvalidRequestError('input is required', 'input');
  const tools = decodeTools(req.tools);
  const choice = applyToolChoice(tools.defs, req.tool_choice);
  const text = decodeText(req.text);
  const reasoning = decodeReasoning(req.reasoning);
  const keepAliveMs = parseCompatKeepAlive(req.keep_alive);
  const command: ChatCommand = {
    model,
    messages,
    ...choice,
    format: text.format,
    ...(reasoning.think !== undefined ? { think: reasoning.think } : {}),
    growContext: true,
    options: decodeOptions({ num_predict: maxOutput, temperature: temperature ?? 1.0, top_p: topP }),
    ...(keepAliveMs !== undefined ? { keepAliveMs } : {}),
    startedAt,
  };
  const echo: ResponseEcho = {
    model,
    instructions: instructions ?? null,
    max_output_tokens: maxOutput ?? null,
    metadata: decodeMetadata(req.metadata),
    parallel_tool_calls: parallel ?? true,
    previous_response_id: previousResponseIdOf(req) ?? null,
    reasoning: reasoning.echo,
    store: store ?? true,
    temperature: temperature ?? 1.0,
    text: text.echo,
    tool_choice: req.tool_choice ?? 'auto',
    tools: tools.echo,
    top_p: topP ?? null,
    ...(user !== undefined ? { user } : {}),
    prompt_cache_key: typeof req.prompt_cache_key === 'string' ? req.prompt_cache_key : null,
    safety_identifier: typeof req.safety_identifier === 'string' ? req.safety_identifier : null,
  };
  return { command, input, echo, stream: wantsResponsesStream(req) };
}
