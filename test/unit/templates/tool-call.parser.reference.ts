/**
 * The tool-call parser as it was before it became incremental (re-scanning the whole buffer on every chunk): kept as
 * the oracle that tool-call.parser.test.ts compares the incremental ToolCallParser with, chunk by chunk.
 */
import { randomInt } from 'node:crypto';
import { GoTemplate } from '../../../src/templates/go-template';
import { TemplateTool } from '../../../src/templates/ollama-template.renderer';
import { inferToolCallTag } from '../../../src/templates/template-inspection';

/** A parsed tool call, in Ollama's api.ToolCall shape. */
interface ParsedToolCall {
  id: string;
  function: { index: number; name: string; arguments: Record<string, unknown> };
}

/** What one `add`/`finish` call yields: user-visible content and completed tool calls. */
interface ToolCallChunk {
  content: string;
  toolCalls: ParsedToolCall[];
}

const ID_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** `call_` + 8 random [a-z0-9]. */
function newToolCallId(): string {
  let s = 'call_';
  for (let i = 0; i < 8; i++) s += ID_CHARS[randomInt(ID_CHARS.length)];
  return s;
}

enum State {
  LookingForTag,
  ToolCalling,
  Done,
}

type JsonObject = Record<string, unknown>;

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Finds the earliest (then longest) tool name in `buf`; null while the buffer ends with a proper prefix of a tool
 * name (more data may extend it). Returns the tool and the end offset of the name.
 */
function findTool(buf: string, tools: TemplateTool[]): { tool: TemplateTool; end: number } | null {
  if (buf.length === 0) return null;
  let longest = 0;
  for (const t of tools) longest = Math.max(longest, t.function.name.length);
  for (let i = 1; i <= Math.min(buf.length, longest); i++) {
    const tail = buf.slice(buf.length - i);
    for (const t of tools) {
      const name = t.function.name;
      if (tail.length < name.length && name.startsWith(tail)) return null;
    }
  }
  let found: TemplateTool | null = null;
  let start = -1;
  let end = -1;
  for (const t of tools) {
    const name = t.function.name;
    if (name === '') continue;
    const pos = buf.indexOf(name);
    if (pos === -1) continue;
    if (start !== -1 && found) {
      if (pos > start) continue;
      if (pos === start && name.length <= found.function.name.length) continue;
    }
    found = t;
    start = pos;
    end = pos + name.length;
  }
  return found ? { tool: found, end } : null;
}

function parseArgsString(v: unknown): JsonObject | null {
  if (typeof v !== 'string') return null;
  try {
    const parsed = JSON.parse(v) as unknown;
    return isObject(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

/** The first balanced JSON object in `buffer` that parses, with the arguments found in it, and its end offset. */
function findArguments(tool: TemplateTool, buffer: string): { args: JsonObject; end: number } | null {
  let start = -1;
  let braces = 0;
  let inString = false;
  let escaped = false;
  for (let i = 0; i < buffer.length; i++) {
    const c = buffer[i];
    if (escaped) {
      escaped = false;
      continue;
    }
    if (c === '\\') {
      escaped = true;
      continue;
    }
    if (c === '"') {
      inString = !inString;
      continue;
    }
    if (inString) continue;
    if (c === '{') {
      if (braces === 0) start = i;
      braces++;
    } else if (c === '}') {
      braces--;
      if (braces === 0 && start !== -1) {
        let data: unknown;
        try {
          data = JSON.parse(buffer.slice(start, i + 1));
        } catch {
          start = -1;
          continue;
        }
        if (!isObject(data)) {
          start = -1;
          continue;
        }
        const findMap = (name: string, obj: JsonObject): JsonObject | null => {
          const v = obj[name];
          if (isObject(v)) return v;
          return parseArgsString(v);
        };
        const findObject = (obj: JsonObject): { found: boolean; args: JsonObject | null } => {
          if ('name' in obj) {
            return { found: true, args: findMap('arguments', obj) ?? findMap('parameters', obj) };
          }
          const direct = findMap(tool.function.name, obj);
          if (direct) return { found: true, args: direct };
          for (const v of Object.values(obj)) {
            if (isObject(v)) {
              const r = findObject(v);
              if (r.found) return r;
            } else if (Array.isArray(v)) {
              for (const item of v) {
                if (isObject(item)) {
                  const r = findObject(item);
                  if (r.found) return r;
                }
              }
            }
          }
          return { found: false, args: null };
        };
        const r = findObject(data);
        if (r.found) return { args: r.args ?? {}, end: i + 1 };
        return { args: data, end: i + 1 };
      }
      if (braces < 0) braces = 0;
    }
  }
  return null;
}

/**
 * Streaming tool-call parser (Ollama tools.Parser, reference §8.5).
 *
 * The tag is inferred from the template (`<tool_call>`, `[TOOL_CALLS]`, …; `{` when none). While looking for the
 * tag, text before it is emitted and a suffix that could start the tag is held back. With a `{`/`[` tag, parsing is
 * only attempted when the first non-whitespace output is that character. After the tag, tool calls are extracted
 * as they complete (content is suppressed); with a `{`/`[` tag the parser is done once the brackets balance, and
 * the rest is content. `finish()` flushes: a held-back partial tag, or — if the stream ends inside the tag state
 * without any call parsed — the buffered text, as content.
 */
export class ReferenceToolCallParser {
  readonly tag: string;
  private state = State.LookingForTag;
  private buffer = '';
  private n = 0;

  /** @param t the model's template (for the tag); @param tools the request's tools (names to look for). */
  constructor(
    t: GoTemplate | null,
    private readonly tools: TemplateTool[],
    tag?: string,
  ) {
    this.tag = tag ?? (t ? inferToolCallTag(t) : '{');
  }

  /** Feeds one chunk of model output. */
  add(chunk: string): ToolCallChunk {
    if (this.state === State.Done) return { content: chunk, toolCalls: [] };
    this.buffer += chunk;
    let content = '';
    if (this.state === State.LookingForTag) {
      const { index, found } = this.findTag();
      if (index === -1) {
        content = this.buffer;
        this.buffer = '';
      } else {
        content = this.buffer.slice(0, index);
        this.buffer = this.buffer.slice(index);
      }
      if (this.tag === '{' || this.tag === '[') {
        if (content.trim() !== '') {
          this.state = State.Done;
          const all = content + this.buffer;
          this.buffer = '';
          return { content: all, toolCalls: [] };
        }
      }
      if (!found) return { content, toolCalls: [] };
      this.state = State.ToolCalling;
    }
    const toolCalls: ParsedToolCall[] = [];
    for (;;) {
      const call = this.parseToolCall();
      if (!call) break;
      toolCalls.push(call);
    }
    if (this.done()) {
      this.state = State.Done;
      content = this.buffer;
      this.buffer = '';
    }
    return { content, toolCalls };
  }

  /** Ends the stream: returns held-back text that turned out not to be a tool call. */
  finish(): ToolCallChunk {
    const buf = this.buffer;
    this.buffer = '';
    const state = this.state;
    this.state = State.Done;
    if (state === State.LookingForTag) return { content: buf, toolCalls: [] };
    if (state === State.ToolCalling && this.n === 0) return { content: buf, toolCalls: [] };
    return { content: '', toolCalls: [] };
  }

  private findTag(): { index: number; found: boolean } {
    const i = this.buffer.indexOf(this.tag);
    if (i > -1) return { index: i, found: true };
    const max = Math.min(this.buffer.length, this.tag.length);
    for (let k = max; k > 0; k--) {
      if (this.buffer.endsWith(this.tag.slice(0, k))) return { index: this.buffer.length - k, found: false };
    }
    return { index: -1, found: false };
  }

  private parseToolCall(): ParsedToolCall | null {
    const t = findTool(this.buffer, this.tools);
    if (!t) return null;
    const a = findArguments(t.tool, this.buffer);
    if (!a) return null;
    const end = Math.max(t.end, a.end);
    const call: ParsedToolCall = {
      id: newToolCallId(),
      function: { index: this.n, name: t.tool.function.name, arguments: a.args },
    };
    this.n++;
    this.buffer = this.buffer.slice(end);
    return call;
  }

  private done(): boolean {
    let open: string;
    let close: string;
    if (this.tag === '{') [open, close] = ['{', '}'];
    else if (this.tag === '[') [open, close] = ['[', ']'];
    else return false;
    let count = 0;
    for (const c of this.buffer) {
      if (c === open) count++;
      else if (c === close) {
        count--;
        if (count === 0) return true;
      }
    }
    return false;
  }
}
