/**
 * The incremental pieces of the streaming tool-call parser (tool-call.parser.ts): a text buffer addressed by absolute
 * stream positions that never joins more than what is asked for, a resumable scan for the first JSON object, and a
 * resumable search for tool names. Each resumes where the previous call stopped, so feeding a stream chunk by chunk
 * costs O(chunk) per chunk (amortized) instead of a re-scan of everything buffered. The behaviour they reproduce is
 * Ollama's tools/tools.go (reference §8.5); the incremental structure is this project's own.
 */
import { TemplateTool } from './ollama-template.renderer';

/**
 * Text appended in chunks, read back by absolute position (UTF-16 code units since the stream began). `base` is where
 * the live text starts (everything before was consumed), `end` where it ends. Chunks are kept as given: reading a
 * range joins only the chunks that overlap it, so no operation flattens the whole buffer.
 */
export class ChunkBuffer {
  private chunks: string[] = [];
  private starts: number[] = [];
  private head = 0;
  /** Absolute position of the first live character. */
  base = 0;
  /** Absolute position after the last character. */
  end = 0;

  /** The live text's length. */
  get length(): number {
    return this.end - this.base;
  }

  /** Appends a chunk. */
  append(s: string): void {
    if (s === '') return;
    this.chunks.push(s);
    this.starts.push(this.end);
    this.end += s.length;
  }

  /** The text in [from, to) (absolute, clamped to the live text); O(to − from + chunks touched + log chunks). */
  text(from = this.base, to = this.end): string {
    from = Math.max(from, this.base);
    to = Math.min(to, this.end);
    if (from >= to) return '';
    let out = '';
    for (let j = this.chunkAt(from); j < this.chunks.length && this.starts[j] < to; j++) {
      const s = this.starts[j];
      out += this.chunks[j].slice(Math.max(0, from - s), Math.min(this.chunks[j].length, to - s));
    }
    return out;
  }

  /**
   * Calls `fn(code, pos)` for each character from `from` (absolute) to the end, in order, until `fn` returns true;
   * returns the position after the character that stopped it, or `end`.
   */
  scan(from: number, fn: (c: string, pos: number) => boolean): number {
    from = Math.max(from, this.base);
    for (let j = from < this.end ? this.chunkAt(from) : this.chunks.length; j < this.chunks.length; j++) {
      const chunk = this.chunks[j];
      const s = this.starts[j];
      for (let k = Math.max(0, from - s); k < chunk.length; k++) if (fn(chunk[k], s + k)) return s + k + 1;
    }
    return this.end;
  }

  /** Drops the text before `pos` (absolute): `base` becomes `pos` (at most `end`). */
  consume(pos: number): void {
    this.base = Math.min(Math.max(pos, this.base), this.end);
    while (this.head < this.chunks.length && this.starts[this.head] + this.chunks[this.head].length <= this.base) {
      this.head++;
    }
    if (this.head > 64 && this.head * 2 > this.chunks.length) {
      this.chunks = this.chunks.slice(this.head);
      this.starts = this.starts.slice(this.head);
      this.head = 0;
    }
  }

  /** Drops all live text. */
  clear(): void {
    this.consume(this.end);
  }

  /** Index of the chunk holding absolute position `pos` (base ≤ pos < end): binary search over the live chunks. */
  private chunkAt(pos: number): number {
    let lo = this.head;
    let hi = this.chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}

type JsonObject = Record<string, unknown>;

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Finds the first balanced `{…}` of a buffer that parses as a JSON object, scanning only what arrived since the last
 * call. Brace counting skips JSON strings; a backslash escapes the next character anywhere (as Ollama's scan does);
 * a balanced candidate that does not parse as an object is dropped and the scan goes on after it. Once an object is
 * found the scan stops there until `restart()`.
 */
export class JsonObjectScanner {
  private pos = 0;
  private start = -1;
  private braces = 0;
  private inString = false;
  private escaped = false;
  private found: { data: JsonObject; end: number } | null = null;

  /** Starts over at absolute position `pos` (after a consumed call). */
  restart(pos: number): void {
    this.pos = pos;
    this.start = -1;
    this.braces = 0;
    this.inString = false;
    this.escaped = false;
    this.found = null;
  }

  /** The first object of `buf` from the restart point (its parsed value and absolute end), or null so far. */
  next(buf: ChunkBuffer): { data: JsonObject; end: number } | null {
    if (this.found) return this.found;
    this.pos = buf.scan(this.pos, (c, i) => this.step(buf, c, i));
    return this.found;
  }

  /** One character of the scan; true when it completed an object. */
  private step(buf: ChunkBuffer, c: string, i: number): boolean {
    if (this.escaped) {
      this.escaped = false;
      return false;
    }
    if (c === '\\') {
      this.escaped = true;
      return false;
    }
    if (c === '"') {
      this.inString = !this.inString;
      return false;
    }
    if (this.inString) return false;
    if (c === '{') {
      if (this.braces === 0) this.start = i;
      this.braces++;
    } else if (c === '}') {
      this.braces--;
      if (this.braces === 0 && this.start !== -1) {
        let data: unknown;
        try {
          data = JSON.parse(buf.text(this.start, i + 1));
        } catch {
          this.start = -1;
          return false;
        }
        if (!isObject(data)) {
          this.start = -1;
          return false;
        }
        this.found = { data, end: i + 1 };
        return true;
      }
      if (this.braces < 0) this.braces = 0;
    }
    return false;
  }
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

/**
 * The arguments of `tool` in a parsed call object (Ollama's findArguments): the first object, depth first, with a
 * `name` key gives its `arguments` or `parameters` (an object, or a string holding one; `{}` when neither), one with
 * a key equal to the tool's name gives that value; with neither, the whole object is the arguments.
 */
export function argumentsOf(tool: TemplateTool, data: JsonObject): JsonObject {
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
  return r.found ? (r.args ?? {}) : data;
}

/**
 * Finds the earliest (then longest, then first listed) tool name in a buffer, remembering per tool where its first
 * occurrence is or how far the text is known to hold none, so each call searches only the new text (plus a name's
 * length of overlap). Returns null while the buffer ends with a proper prefix of a tool name (more text may extend
 * it into a longer match) — Ollama's findTool.
 */
export class ToolNameFinder {
  private readonly at: number[];
  private readonly searched: number[];
  private readonly longest: number;

  constructor(private readonly tools: TemplateTool[]) {
    this.at = tools.map(() => -1);
    this.searched = tools.map(() => 0);
    this.longest = tools.reduce((m, t) => Math.max(m, t.function.name.length), 0);
  }

  /** Forgets occurrences before absolute position `pos` (the buffer was consumed up to there). */
  restart(pos: number): void {
    for (let i = 0; i < this.tools.length; i++) {
      if (this.at[i] !== -1 && this.at[i] < pos) {
        this.at[i] = -1;
        this.searched[i] = pos;
      } else if (this.at[i] === -1) this.searched[i] = Math.max(this.searched[i], pos);
    }
  }

  /** The tool whose name occurs first in the live text of `buf` and the absolute end of that occurrence, or null. */
  next(buf: ChunkBuffer): { tool: TemplateTool; end: number } | null {
    if (buf.length === 0) return null;
    const n = Math.min(buf.length, this.longest);
    const tail = buf.text(buf.end - n);
    for (let i = 1; i <= n; i++) {
      const t = tail.slice(n - i);
      for (const tool of this.tools) {
        const name = tool.function.name;
        if (t.length < name.length && name.startsWith(t)) return null;
      }
    }
    let found = -1;
    for (let i = 0; i < this.tools.length; i++) {
      const name = this.tools[i].function.name;
      if (name === '') continue;
      const pos = this.occurrence(buf, i);
      if (pos === -1) continue;
      if (found !== -1) {
        if (pos > this.at[found]) continue;
        if (pos === this.at[found] && name.length <= this.tools[found].function.name.length) continue;
      }
      found = i;
    }
    return found === -1
      ? null
      : { tool: this.tools[found], end: this.at[found] + this.tools[found].function.name.length };
  }

  /** The first occurrence of tool `i`'s name at or after `buf.base` (absolute), searching only unsearched text. */
  private occurrence(buf: ChunkBuffer, i: number): number {
    if (this.at[i] !== -1) return this.at[i];
    const name = this.tools[i].function.name;
    const from = Math.max(this.searched[i], buf.base);
    const k = buf.text(from).indexOf(name);
    if (k >= 0) this.at[i] = from + k;
    else this.searched[i] = Math.max(from, buf.end - name.length + 1);
    return this.at[i];
  }
}
