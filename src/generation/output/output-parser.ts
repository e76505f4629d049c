import { randomBytes } from 'node:crypto';
import { ToolCall } from '../generation.types';

/**
 * Splitting raw model output into content, thinking and tool calls (reference/ollama-api.md §8.5, §8.6). Parsers are
 * fed the generated text piece by piece and return only what is new since the last call.
 */

/** What one parser step released: new content and thinking text, and newly completed tool calls. */
export interface ParsedDelta {
  content: string;
  thinking: string;
  toolCalls: ToolCall[];
}

/** An incremental output parser for one generation. */
export interface OutputParser {
  /** Feeds the next piece of generated text; returns what became final. */
  add(text: string): ParsedDelta;
  /** The output ended: returns everything still held back (incomplete tags become content). */
  finish(): ParsedDelta;
}

/** An empty delta. */
export function emptyDelta(): ParsedDelta {
  return { content: '', thinking: '', toolCalls: [] };
}

/** Whether a delta carries nothing. */
export function isEmptyDelta(d: ParsedDelta): boolean {
  return d.content === '' && d.thinking === '' && d.toolCalls.length === 0;
}

/** Ollama's tool-call id: `call_` + 8 random `[a-z0-9]` (§3.3). */
export function newToolCallId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return 'call_' + Array.from(randomBytes(8), (b) => alphabet[b % alphabet.length]).join('');
}

/**
 * Tool-call arguments (JSON text from the engine) → a JSON object. Non-object JSON or invalid text gives `{}`
 * (Ollama's `arguments` is always an object).
 */
export function parseToolArguments(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** A Go-template tool-call parser's calls with ids (`call_xxxxxxxx` when the parser gave none). */
function withIds(calls: ToolCall[]): ToolCall[] {
  return calls.map((c) => (c.id ? c : { ...c, id: newToolCallId() }));
}

/**
 * Rendered mode (§8.5, §8.6): the output first goes through the thinking splitter (when the template has thinking
 * tags and thinking is on), then its content through the tool-call parser (when the request has tools). Tool calls
 * are released as soon as each one is complete. Both parsers keep only what is still ambiguous and resume where they
 * stopped, so a piece costs O(piece) amortized, however long the output (tests compare with parsing it whole).
 */
export class RenderedOutputParser implements OutputParser {
  constructor(
    private readonly thinking?: {
      add(chunk: string): { thinking: string; content: string };
      finish?(): { thinking: string; content: string };
    },
    private readonly tools?: {
      add(chunk: string): { content: string; toolCalls: ToolCall[] };
      finish(): { content: string; toolCalls: ToolCall[] };
    },
  ) {}

  add(piece: string): ParsedDelta {
    const t = this.thinking ? this.thinking.add(piece) : { thinking: '', content: piece };
    const c = this.tools && t.content !== '' ? this.tools.add(t.content) : { content: t.content, toolCalls: [] };
    return { content: c.content, thinking: t.thinking, toolCalls: withIds(c.toolCalls) };
  }

  finish(): ParsedDelta {
    const t = this.thinking?.finish ? this.thinking.finish() : { thinking: '', content: '' };
    let content = t.content;
    let toolCalls: ToolCall[] = [];
    if (this.tools) {
      const a = content !== '' ? this.tools.add(content) : { content: '', toolCalls: [] };
      const b = this.tools.finish();
      content = a.content + b.content;
      toolCalls = withIds([...a.toolCalls, ...b.toolCalls]);
    }
    return { content, thinking: t.thinking, toolCalls };
  }
}
