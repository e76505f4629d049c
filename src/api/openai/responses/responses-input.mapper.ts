import { InvalidRequestError } from '../../../common/errors';
import type { ChatMessage, ToolCall } from '../../../generation';
import { decodeImageUrl, decodeInputAudio } from '..';

/**
 * Responses `input` → domain chat messages (reference/ollama-api.md §12.6; openai SDK `ResponseInputItem`). Pure;
 * every rejection is an InvalidRequestError (400 `invalid_request_error`, `param: "input"`).
 */

type Json = Record<string, unknown>;

const ROLES: Record<string, string> = { user: 'user', assistant: 'assistant', system: 'system', developer: 'system' };

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function invalid(message: string): InvalidRequestError {
  return new InvalidRequestError(message, 'input');
}

/** An `input_image` part → base64 data (data URLs only, as the chat layer). */
function imageOf(part: Json): string {
  if (typeof part.image_url !== 'string') {
    throw invalid(
      typeof part.file_id === 'string'
        ? 'image file ids are not supported, please use base64 encoded data instead'
        : 'invalid image input',
    );
  }
  try {
    return decodeImageUrl(part.image_url);
  } catch (err) {
    throw err instanceof InvalidRequestError ? invalid(err.message) : err;
  }
}

/** Decoded content: its text, and its images and audio files (base64), each in part order. */
export interface DecodedContent {
  text: string;
  images: string[];
  audio: string[];
}

/**
 * Content of a message or of a function_call_output: a string, or parts — `input_text` / `output_text` text
 * concatenated without separator (as Ollama), `input_image` data URLs and `input_audio` data (decodeInputAudio)
 * collected, `refusal` text kept as text.
 * @throws InvalidRequestError `file inputs are not currently supported` (input_file, as Ollama),
 *   `invalid content part type: <t>`, image and input_audio errors, `invalid message content`.
 */
export function decodeContent(content: unknown): DecodedContent {
  if (typeof content === 'string') return { text: content, images: [], audio: [] };
  if (!Array.isArray(content)) throw invalid('invalid message content: expected a string or an array of parts');
  let text = '';
  const images: string[] = [];
  const audio: string[] = [];
  for (const part of content as unknown[]) {
    if (!isObject(part)) throw invalid('invalid message content: a part must be an object');
    switch (part.type) {
      case 'input_text':
      case 'output_text':
        if (typeof part.text !== 'string') throw invalid(`invalid ${part.type} part: text must be a string`);
        text += part.text;
        break;
      case 'refusal':
        if (typeof part.refusal === 'string') text += part.refusal;
        break;
      case 'input_image':
        images.push(imageOf(part));
        break;
      case 'input_file':
        throw invalid('file inputs are not currently supported');
      case 'input_audio':
        audio.push(decodeInputAudio(part.input_audio, 'input'));
        break;
      default:
        throw invalid(`invalid content part type: ${JSON.stringify(part.type)}`);
    }
  }
  return { text, images, audio };
}

/** The media fields of a domain message from decoded content (absent when empty). */
function media(c: DecodedContent): Pick<ChatMessage, 'images' | 'audio'> {
  return { ...(c.images.length > 0 ? { images: c.images } : {}), ...(c.audio.length > 0 ? { audio: c.audio } : {}) };
}

/**
 * A `function_call` item → a domain tool call: `call_id` and `name` strings, `arguments` JSON text of an object
 * (`""` = `{}`).
 * @throws InvalidRequestError `function_call items need a string call_id and name`, `invalid tool call arguments`.
 */
function decodeFunctionCall(item: Json, index: number): ToolCall {
  if (typeof item.call_id !== 'string' || typeof item.name !== 'string') {
    throw invalid('function_call items need a string call_id and name');
  }
  let args: unknown = item.arguments ?? '{}';
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args === '' ? '{}' : args);
    } catch {
      throw invalid('invalid tool call arguments');
    }
  }
  if (!isObject(args)) throw invalid('invalid tool call arguments');
  return { id: item.call_id, function: { index, name: item.name, arguments: args } };
}

/** Thinking text of a `reasoning` item: its `reasoning_text` content, else `encrypted_content` (Ollama reuses it). */
function reasoningText(item: Json): string {
  if (Array.isArray(item.content)) {
    const text = (item.content as unknown[])
      .map((c) => (isObject(c) && c.type === 'reasoning_text' && typeof c.text === 'string' ? c.text : ''))
      .join('');
    if (text !== '') return text;
  }
  return typeof item.encrypted_content === 'string' ? item.encrypted_content : '';
}

/**
 * Decodes `input` into messages appended after `prior` (the stored conversation of `previous_response_id`, whose
 * tool calls name the tools of later `function_call_output` items).
 * - a string → one user message; absent/null → none;
 * - `message` items (or items with only `role`): role user / assistant / system / developer (→ system), content as
 *   decodeContent;
 * - `function_call` items join the assistant message right before them (or start one with empty content);
 * - `function_call_output` items → `role: "tool"` messages with `toolCallId` and the name of the matching call;
 * - `reasoning` items become the thinking of the next assistant message;
 * - a bare `input_audio` item becomes a user message with that audio (decodeInputAudio);
 * - other item types (`item_reference`, built-in tool calls, …) are ignored.
 * @throws InvalidRequestError `invalid input`, `invalid input item`, `invalid role: <r>`, content and call errors.
 */
export function decodeInput(input: unknown, prior: readonly ChatMessage[] = []): ChatMessage[] {
  if (input === undefined || input === null) return [];
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  if (!Array.isArray(input)) throw invalid('invalid input: expected a string or an array of input items');
  const toolNames = new Map<string, string>();
  for (const m of prior) for (const c of m.toolCalls ?? []) if (c.id) toolNames.set(c.id, c.function.name);
  const out: ChatMessage[] = [];
  let thinking = '';
  // The assistant message that a following function_call item joins (reset by any other item).
  let openAssistant: ChatMessage | undefined;
  const assistant = (content: string, extra: Pick<ChatMessage, 'images' | 'audio'> = {}): ChatMessage => {
    const msg: ChatMessage = { role: 'assistant', content, ...extra };
    if (thinking !== '') msg.thinking = thinking;
    thinking = '';
    out.push(msg);
    return msg;
  };
  for (const item of input as unknown[]) {
    if (!isObject(item)) throw invalid('invalid input item: expected an object');
    const type = typeof item.type === 'string' ? item.type : item.role !== undefined ? 'message' : undefined;
    if (type === undefined) throw invalid('invalid input item: missing type');
    switch (type) {
      case 'message': {
        const role = typeof item.role === 'string' ? ROLES[item.role.toLowerCase()] : undefined;
        if (!role) throw invalid(`invalid role: ${JSON.stringify(item.role)}`);
        const content = decodeContent(item.content);
        if (role === 'assistant') {
          openAssistant = assistant(content.text, media(content));
        } else {
          out.push({ role, content: content.text, ...media(content) });
          openAssistant = undefined;
        }
        break;
      }
      case 'function_call': {
        const target = openAssistant ?? assistant('');
        const call = decodeFunctionCall(item, target.toolCalls?.length ?? 0);
        target.toolCalls = [...(target.toolCalls ?? []), call];
        toolNames.set(call.id!, call.function.name);
        openAssistant = target;
        break;
      }
      case 'function_call_output': {
        if (typeof item.call_id !== 'string') throw invalid('function_call_output items need a string call_id');
        const output = decodeContent(item.output ?? '');
        const name = toolNames.get(item.call_id);
        out.push({
          role: 'tool',
          content: output.text,
          ...media(output),
          ...(name ? { toolName: name } : {}),
          toolCallId: item.call_id,
        });
        openAssistant = undefined;
        break;
      }
      case 'input_audio':
        // A bare audio part as an input item: a user message of its own (as a string input is).
        out.push({ role: 'user', content: '', audio: [decodeInputAudio(item.input_audio, 'input')] });
        openAssistant = undefined;
        break;
      case 'reasoning':
        thinking += reasoningText(item);
        openAssistant = undefined;
        break;
      default:
        openAssistant = undefined;
    }
  }
  return out;
}
