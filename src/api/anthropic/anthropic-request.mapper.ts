import { InvalidRequestError } from '../../common/errors';
import { decodeOptions } from '../../common/options';
import { parseCompatKeepAlive } from '../../common/time';
import { ChatCommand, ChatMessage, ToolCall, ToolDefinition } from '../../generation';

/**
 * Anthropic request body → ChatCommand (reference/ollama-api.md §12.8; errors with §5.4's middleware texts). Pure: no
 * model lookup — dropping `thinking` for models without the capability happens in AnthropicMessagesService.
 */

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Text of a `system` field: a string, or text blocks concatenated without separator (`cache_control` ignored). */
export function systemText(system: unknown): string {
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) {
    if (system === undefined || system === null) return '';
    throw new InvalidRequestError('system must be a string or an array of text blocks', 'system');
  }
  return system.map((b) => (isObject(b) && b.type === 'text' && typeof b.text === 'string' ? b.text : '')).join('');
}

/**
 * Base64 data of an image block.
 * @throws InvalidRequestError `invalid image source`, or `invalid image source type: <t>. Only base64 images are
 *   supported.`
 */
function imageData(block: Json): string {
  const source = block.source;
  if (!isObject(source)) throw new InvalidRequestError('invalid image source', 'messages');
  if (source.type !== 'base64') {
    throw new InvalidRequestError(
      `invalid image source type: ${String(source.type)}. Only base64 images are supported.`,
      'messages',
    );
  }
  if (typeof source.data !== 'string') throw new InvalidRequestError('invalid image source', 'messages');
  return source.data;
}

/** `tool_result.content`: a string, or text/image blocks (text concatenated, images collected). */
function toolResultContent(content: unknown): { text: string; images: string[] } {
  if (typeof content === 'string') return { text: content, images: [] };
  const images: string[] = [];
  let text = '';
  if (Array.isArray(content)) {
    for (const b of content) {
      if (!isObject(b)) continue;
      if (b.type === 'text' && typeof b.text === 'string') text += b.text;
      else if (b.type === 'image') images.push(imageData(b));
    }
  }
  return { text, images };
}

/**
 * One Anthropic message → domain messages: tool_result blocks become `role: "tool"` messages placed before the
 * message itself (with the tool name looked up from earlier tool_use blocks); text blocks concatenate; base64 images,
 * tool_use (→ toolCalls) and thinking (→ thinking) are carried; unknown block types are ignored.
 * @param toolNames tool_use id → name, filled as tool_use blocks are seen.
 * @throws InvalidRequestError `tool_use block missing required 'id' field` / `… 'name' field`, image errors.
 */
export function toChatMessages(message: unknown, toolNames: Map<string, string>): ChatMessage[] {
  if (!isObject(message)) throw new InvalidRequestError('messages must be objects', 'messages');
  const role = typeof message.role === 'string' ? message.role.toLowerCase() : '';
  const content = message.content;
  if (typeof content === 'string') return [{ role, content }];
  const out: ChatMessage[] = [];
  const main: ChatMessage = { role, content: '' };
  const images: string[] = [];
  const toolCalls: ToolCall[] = [];
  let thinking = '';
  for (const block of Array.isArray(content) ? content : []) {
    if (!isObject(block)) continue;
    switch (block.type) {
      case 'text':
        if (typeof block.text === 'string') main.content += block.text;
        break;
      case 'image':
        images.push(imageData(block));
        break;
      case 'tool_use': {
        if (typeof block.id !== 'string' || block.id === '') {
          throw new InvalidRequestError("tool_use block missing required 'id' field", 'messages');
        }
        if (typeof block.name !== 'string' || block.name === '') {
          throw new InvalidRequestError("tool_use block missing required 'name' field", 'messages');
        }
        toolNames.set(block.id, block.name);
        toolCalls.push({
          id: block.id,
          function: { index: toolCalls.length, name: block.name, arguments: isObject(block.input) ? block.input : {} },
        });
        break;
      }
      case 'tool_result': {
        const id = typeof block.tool_use_id === 'string' ? block.tool_use_id : '';
        const result = toolResultContent(block.content);
        const name = toolNames.get(id);
        out.push({
          role: 'tool',
          content: result.text,
          ...(result.images.length > 0 ? { images: result.images } : {}),
          ...(id ? { toolCallId: id } : {}),
          ...(name ? { toolName: name } : {}),
        });
        break;
      }
      case 'thinking':
        if (typeof block.thinking === 'string') thinking += block.thinking;
        break;
      default:
        break;
    }
  }
  if (images.length > 0) main.images = images;
  if (toolCalls.length > 0) main.toolCalls = toolCalls;
  if (thinking) main.thinking = thinking;
  // A user turn that only carried tool results adds no empty user message.
  if (out.length === 0 || main.content !== '' || images.length > 0 || toolCalls.length > 0 || thinking) out.push(main);
  return out;
}

/**
 * Anthropic tools → function tools: `{name, description, input_schema}` → `{type: "function", function: {name,
 * description, parameters}}`. Server tools (a `type` other than `custom`) are not supported and are skipped.
 */
export function toToolDefinitions(tools: unknown): ToolDefinition[] | undefined {
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  const out: ToolDefinition[] = [];
  for (const t of tools) {
    if (!isObject(t) || typeof t.name !== 'string') continue;
    if (typeof t.type === 'string' && t.type !== 'custom') continue;
    if (t.input_schema !== undefined && !isObject(t.input_schema)) {
      throw new InvalidRequestError(`invalid input_schema for tool ${JSON.stringify(t.name)}: not an object`, 'tools');
    }
    out.push({
      type: 'function',
      function: {
        name: t.name,
        description: typeof t.description === 'string' ? t.description : '',
        parameters: t.input_schema ?? { type: 'object', properties: {} },
      },
    });
  }
  return out.length > 0 ? out : undefined;
}

/**
 * `thinking` → think: `{type: "enabled"}` → true, `{type: "disabled"}` → false (budget_tokens ignored); without it,
 * `output_config.effort` low/medium/high/max (`xhigh` → high) is a think level; otherwise undefined.
 */
export function decodeAnthropicThink(body: Json): boolean | string | undefined {
  if (isObject(body.thinking)) {
    if (body.thinking.type === 'enabled') return true;
    if (body.thinking.type === 'disabled') return false;
  }
  const effort = isObject(body.output_config) ? body.output_config.effort : undefined;
  if (effort === 'xhigh') return 'high';
  if (effort === 'low' || effort === 'medium' || effort === 'high' || effort === 'max') return effort;
  return undefined;
}

function optionalNumber(body: Json, key: string): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new InvalidRequestError(`${key} must be a number`, key);
  return v;
}

/**
 * Anthropic `tool_choice`: `{type:"auto"}`/absent → the model chooses; `{type:"any"}` → it must call a tool;
 * `{type:"tool", name}` → it must call that tool (the others are dropped); `{type:"none"}` → no tools.
 * @throws InvalidRequestError when `{type:"tool"}` names no tool of the request.
 */
export function applyToolChoice(
  tools: ToolDefinition[] | undefined,
  choice: unknown,
): { tools?: ToolDefinition[]; toolChoice?: 'auto' | 'required' } {
  if (!tools || tools.length === 0) return {};
  if (!isObject(choice)) return { tools };
  switch (choice.type) {
    case 'none':
      return {};
    case 'any':
      return { tools, toolChoice: 'required' };
    case 'tool': {
      const named = tools.filter((t) => t.function?.name === choice.name);
      if (named.length === 0) {
        throw new InvalidRequestError(`tool_choice names an unknown tool: ${String(choice.name)}`, 'tool_choice');
      }
      return { tools: named, toolChoice: 'required' };
    }
    default:
      return { tools };
  }
}

/**
 * A POST /v1/messages (or count_tokens) body → ChatCommand. `max_tokens` → num_predict, `temperature` / `top_p` /
 * `top_k` → options (no defaults injected), `stop_sequences` → stop, `system` → a leading system message,
 * `tool_choice` → toolChoice (applyToolChoice), `keep_alive` (beyond Anthropic and Ollama: the native routes' form,
 * parseCompatKeepAlive) → keepAliveMs; `metadata` is accepted and ignored. The prompt is never cut
 * (`growContext`: a prompt longer than the loaded context reloads the model with a larger one, up to the trained
 * context, else 400; count_tokens then counts against the same runner).
 * @param requireMaxTokens false for count_tokens (which has no max_tokens).
 * @throws InvalidRequestError (400 invalid_request_error): `model is required`, `max_tokens is required and must be
 *   positive`, `messages is required`, parseCompatKeepAlive's (`param: "keep_alive"`), and the block/option errors above.
 */
export function fromMessagesRequest(body: unknown, startedAt: bigint, requireMaxTokens = true): ChatCommand {
  if (body === undefined || body === null || body === '') throw new InvalidRequestError('missing request body');
  if (!isObject(body)) throw new InvalidRequestError('request body must be a JSON object');
  if (typeof body.model !== 'string' || body.model === '') throw new InvalidRequestError('model is required', 'model');
  const maxTokens = body.max_tokens;
  if (requireMaxTokens && (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens <= 0)) {
    throw new InvalidRequestError('max_tokens is required and must be positive', 'max_tokens');
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    throw new InvalidRequestError('messages is required', 'messages');
  }
  const toolNames = new Map<string, string>();
  const messages: ChatMessage[] = [];
  const system = systemText(body.system);
  if (system) messages.push({ role: 'system', content: system });
  for (const m of body.messages) messages.push(...toChatMessages(m, toolNames));
  if (body.stop_sequences !== undefined && body.stop_sequences !== null) {
    if (!Array.isArray(body.stop_sequences) || !body.stop_sequences.every((s) => typeof s === 'string')) {
      throw new InvalidRequestError('stop_sequences must be an array of strings', 'stop_sequences');
    }
  }
  const options = decodeOptions({
    num_predict: requireMaxTokens ? maxTokens : undefined,
    temperature: optionalNumber(body, 'temperature'),
    top_p: optionalNumber(body, 'top_p'),
    top_k: optionalNumber(body, 'top_k'),
    stop: body.stop_sequences,
  });
  const { tools, toolChoice } = applyToolChoice(toToolDefinitions(body.tools), body.tool_choice);
  const keepAliveMs = parseCompatKeepAlive(body.keep_alive);
  return {
    model: body.model,
    messages,
    ...(tools ? { tools } : {}),
    ...(toolChoice ? { toolChoice } : {}),
    options,
    think: decodeAnthropicThink(body),
    growContext: true,
    ...(keepAliveMs !== undefined ? { keepAliveMs } : {}),
    startedAt,
  };
}

/**
 * Rough prompt size (tokens) for message_start when the real count is not known yet (ChatObserver.onPrompt normally
 * gives it first): ≈ characters / 4 over roles, text, thinking and tool JSON.
 */
export function estimateInputTokens(cmd: ChatCommand): number {
  let chars = 0;
  for (const m of cmd.messages) {
    chars += m.role.length + m.content.length + (m.thinking?.length ?? 0);
    for (const c of m.toolCalls ?? []) chars += c.function.name.length + JSON.stringify(c.function.arguments).length;
  }
  for (const t of cmd.tools ?? []) chars += JSON.stringify(t).length;
  return Math.ceil(chars / 4);
}
