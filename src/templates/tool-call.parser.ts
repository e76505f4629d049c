/**
 * Streaming tool-call extraction for Go-template models, mirroring Ollama's tools/tools.go (reference §8.5).
 */
import { randomInt } from 'node:crypto';
import { GoTemplate } from './go-template';
import { TemplateTool } from './ollama-template.renderer';
import { inferToolCallTag } from './template-inspection';
import { ChunkBuffer, JsonObjectScanner, ToolNameFinder, argumentsOf } from './tool-call.scan';

/** A parsed tool call, in Ollama's api.ToolCall shape. */
export interface ParsedToolCall {
  id: string;
  function: { index: number; name: string; arguments: Record<string, unknown> };
}

/** What one `add`/`finish` call yields: user-visible content and completed tool calls. */
export interface ToolCallChunk {
  content: string;
  toolCalls: ParsedToolCall[];
}

const ID_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** `call_` + 8 random [a-z0-9]. */
export function newToolCallId(): string {
  let s = 'call_';
  for (let i = 0; i < 8; i++) s += ID_CHARS[randomInt(ID_CHARS.length)];
  return s;
}

enum State {
  LookingForTag,
  ToolCalling,
  Done,
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
 *
 * Cost: Ollama re-scans the whole buffer on every chunk (quadratic in a long call or in text after a call); here the
 * name search, the JSON object scan and the bracket count resume where they stopped (tool-call.scan.ts), so a chunk
 * costs O(chunk × tools) amortized. The chunk-by-chunk results are the same as a re-scan's (the tests compare both).
 */
export class ToolCallParser {
  readonly tag: string;
  private state = State.LookingForTag;
  private readonly buffer = new ChunkBuffer();
  private readonly names: ToolNameFinder;
  private readonly objects = new JsonObjectScanner();
  /** Bracket count of the `{`/`[` tag's done() check and the absolute position it has counted up to. */
  private depth = { count: 0, pos: 0 };
  private n = 0;

  /** @param t the model's template (for the tag); @param tools the request's tools (names to look for). */
  constructor(t: GoTemplate | null, tools: TemplateTool[], tag?: string) {
    this.tag = tag ?? (t ? inferToolCallTag(t) : '{');
    this.names = new ToolNameFinder(tools);
  }

  /** Feeds one chunk of model output. */
  add(chunk: string): ToolCallChunk {
    if (this.state === State.Done) return { content: chunk, toolCalls: [] };
    this.buffer.append(chunk);
    let content = '';
    if (this.state === State.LookingForTag) {
      // The live text here is at most a held-back partial tag plus this chunk.
      const text = this.buffer.text();
      const { index, found } = findTag(text, this.tag);
      content = index === -1 ? text : text.slice(0, index);
      this.buffer.consume(this.buffer.base + content.length);
      if (this.tag === '{' || this.tag === '[') {
        if (content.trim() !== '') {
          this.state = State.Done;
          const all = content + this.buffer.text();
          this.buffer.clear();
          return { content: all, toolCalls: [] };
        }
      }
      if (!found) return { content, toolCalls: [] };
      this.state = State.ToolCalling;
      this.restart();
    }
    const toolCalls: ParsedToolCall[] = [];
    for (;;) {
      const call = this.parseToolCall();
      if (!call) break;
      toolCalls.push(call);
    }
    if (this.done()) {
      this.state = State.Done;
      content = this.buffer.text();
      this.buffer.clear();
    }
    return { content, toolCalls };
  }

  /** Ends the stream: returns held-back text that turned out not to be a tool call. */
  finish(): ToolCallChunk {
    const buf = this.buffer.text();
    this.buffer.clear();
    const state = this.state;
    this.state = State.Done;
    if (state === State.LookingForTag) return { content: buf, toolCalls: [] };
    if (state === State.ToolCalling && this.n === 0) return { content: buf, toolCalls: [] };
    return { content: '', toolCalls: [] };
  }

  /** Points the incremental scans at the start of the live text (entering the tag state, or after a call). */
  private restart(): void {
    const at = this.buffer.base;
    this.names.restart(at);
    this.objects.restart(at);
    this.depth = { count: 0, pos: at };
  }

  private parseToolCall(): ParsedToolCall | null {
    const t = this.names.next(this.buffer);
    if (!t) return null;
    const a = this.objects.next(this.buffer);
    if (!a) return null;
    const call: ParsedToolCall = {
      id: newToolCallId(),
      function: { index: this.n, name: t.tool.function.name, arguments: argumentsOf(t.tool, a.data) },
    };
    this.n++;
    this.buffer.consume(Math.max(t.end, a.end));
    this.restart();
    return call;
  }

  /**
   * With a `{`/`[` tag: whether the brackets of the live text balance somewhere (a close bringing the count back to
   * zero; not string-aware, as in Ollama). Counts only the text added since the last check: an earlier check that
   * found no balance covers the same prefix.
   */
  private done(): boolean {
    let open: string;
    let close: string;
    if (this.tag === '{') [open, close] = ['{', '}'];
    else if (this.tag === '[') [open, close] = ['[', ']'];
    else return false;
    let balanced = false;
    const depth = this.depth;
    depth.pos = this.buffer.scan(depth.pos, (c) => {
      if (c === open) depth.count++;
      else if (c === close) {
        depth.count--;
        if (depth.count === 0) balanced = true;
      }
      return balanced;
    });
    return balanced;
  }
}

/** Where `tag` starts in `text` (found), or where a suffix that could start it begins (not found), or -1. */
function findTag(text: string, tag: string): { index: number; found: boolean } {
  const i = text.indexOf(tag);
  if (i > -1) return { index: i, found: true };
  const max = Math.min(text.length, tag.length);
  for (let k = max; k > 0; k--) {
    if (text.endsWith(tag.slice(0, k))) return { index: text.length - k, found: false };
  }
  return { index: -1, found: false };
}
