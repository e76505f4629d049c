import type { NativeChatParsed, NativeChatParser, NativeChatStep } from '../../../binding';
import { emptyDelta, newToolCallId, OutputParser, ParsedDelta, parseToolArguments } from './output-parser';

/**
 * Native mode's output parsing (§8.1): the llama.cpp common/chat parser of one renderChat() result. What a piece
 * releases is the growth of the parsed `content` / `reasoningContent` of the whole output so far, as llama-server
 * does for streaming; tool calls are released only by finish() (llama-server's native path sends them on the final
 * chunk, §3.3). A partial parse that throws releases nothing for that piece.
 */

/** The growth of one parse over what was released so far, and which fields were extended (not rewritten). */
interface Advance {
  delta: ParsedDelta;
  contentInSync: boolean;
  thinkingInSync: boolean;
}

/** Moves the released `content` / `thinking` to `parsed` where it extends them (the rule both parsers share). */
function advance(released: { content: string; thinking: string }, parsed: NativeChatParsed, final: boolean): Advance {
  const delta = emptyDelta();
  const contentInSync = parsed.content.startsWith(released.content);
  if (contentInSync) {
    delta.content = parsed.content.slice(released.content.length);
    released.content = parsed.content;
  }
  const thinkingInSync = parsed.reasoningContent.startsWith(released.thinking);
  if (thinkingInSync) {
    delta.thinking = parsed.reasoningContent.slice(released.thinking.length);
    released.thinking = parsed.reasoningContent;
  }
  if (final) {
    delta.toolCalls = parsed.toolCalls.map((c, index) => ({
      id: c.id || newToolCallId(),
      function: { index, name: c.name, arguments: parseToolArguments(c.arguments) },
    }));
  }
  return { delta, contentInSync, thinkingInSync };
}

/**
 * The whole-text reference: re-parses the whole output on every piece (O(output) per piece). Kept as the oracle
 * that NativeOutputParser must match delta for delta (test/native/native-output-parser.test.ts) and as the bench's
 * "before" row.
 */
export class WholeTextNativeOutputParser implements OutputParser {
  private text: string;
  private readonly released = { content: '', thinking: '' };

  /** @param prefix text the prompt ended with that belongs to the model's answer (see NativeOutputParser). */
  constructor(
    private readonly parser: NativeChatParser,
    prefix = '',
  ) {
    this.text = prefix;
  }

  add(piece: string): ParsedDelta {
    this.text += piece;
    try {
      return advance(this.released, this.parser.parse(this.text, true), false).delta;
    } catch {
      return emptyDelta();
    }
  }

  finish(): ParsedDelta {
    return advance(this.released, this.parser.parse(this.text, false), true).delta;
  }
}

const FRONTIER_NONE = 0;
const FRONTIER_CONTENT = 1;
const FRONTIER_REASONING = 2;
const FRONTIER_ARGS_STRING = 3;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Characters after a backslash that end a JSON escape (`u` starts a \uXXXX one). */
const SIMPLE_ESCAPES = new Set(Array.from('"\\/bfnrt', (c) => c.charCodeAt(0)));

/**
 * Whether the UTF-16 unit `c` at `i` is half of no surrogate pair inside `piece`. The addon receives such a unit as
 * U+FFFD, which a pair completed by the next piece then replaces: such pieces are always parsed whole.
 */
function isLoneSurrogate(piece: string, i: number, c: number): boolean {
  if (c >= 0xdc00 && c <= 0xdfff) return true; // a low surrogate not consumed with its high one
  if (c < 0xd800 || c > 0xdbff) return false;
  const next = i + 1 < piece.length ? piece.charCodeAt(i + 1) : 0;
  return next < 0xdc00 || next > 0xdfff;
}

/**
 * Whether delimiter `d` starts at `i` in `piece`, or a prefix of it fills the rest of `piece` (where the region's
 * scan stops: a complete or a partial match). UTF-16 and UTF-8 agree on it: both encodings are prefix-free.
 */
function matchesAt(piece: string, i: number, d: string): boolean {
  const n = Math.min(d.length, piece.length - i);
  for (let k = 0; k < n; k++) if (piece.charCodeAt(i + k) !== d.charCodeAt(k)) return false;
  return true;
}

function isHexDigit(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

/**
 * Native mode's streaming parser: the same deltas as WholeTextNativeOutputParser, parsing the whole output again only
 * when the new text can change the result.
 *
 * Each real parse (NativeChatParser.parseStep) also says where the lenient PEG parse stopped for want of input (its
 * frontier, native/chat_parse_step.h). While the next pieces provably cannot move that place, they are handled in
 * O(piece) without the native call:
 * - inside a content / reasoning region (an until() of the parser) whose released text equals the parsed one: a
 *   piece in which no region delimiter (stepDelimiters()) starts, not even one cut off by the piece's end, extends
 *   that field by exactly the piece, which is released at once;
 * - inside a JSON string of a tool call's arguments: a piece with no unescaped `"` and only valid escapes (tracked
 *   across pieces) changes neither content nor reasoning, so it releases nothing (the call itself is released by
 *   finish(), whose parse is always the whole-text one).
 * Any other piece (a possible delimiter, a closing quote, an invalid escape, an unknown frontier, a format with its
 * own mapper) is parsed whole, as before. So a long answer costs O(piece) per piece in its text, thinking and tool
 * arguments, and a whole parse per structural boundary (`npm run bench -- --sections event-loop` measures it).
 */
export class NativeOutputParser implements OutputParser {
  private text: string;
  private readonly released = { content: '', thinking: '' };
  private frontier = FRONTIER_NONE;
  /** Whether the frontier's field was released exactly as last parsed (skipping needs it). */
  private inSync = false;
  /** JSON string scanner of the args frontier: 0 plain, 1 after `\`, 2..5 hex digits of `\u` still to come. */
  private escape = 0;
  /** The region delimiters (stepDelimiters()). */
  private readonly delimiters: string[];
  /** Their first UTF-16 units; null when one is empty (then text regions are always parsed). */
  private readonly stops: Set<number> | null;

  /**
   * @param prefix text the prompt ended with that belongs to the model's answer (the opening of a forced tool call,
   *   renderNative): parsed in front of the output, as if generated.
   */
  constructor(
    private readonly parser: NativeChatParser,
    prefix = '',
  ) {
    this.text = prefix;
    this.delimiters = parser.stepDelimiters();
    this.stops = this.delimiters.some((d) => d === '') ? null : new Set(this.delimiters.map((d) => d.charCodeAt(0)));
  }

  add(piece: string): ParsedDelta {
    this.text += piece;
    if (this.frontier === FRONTIER_ARGS_STRING && this.staysInString(piece)) return emptyDelta();
    if ((this.frontier === FRONTIER_CONTENT || this.frontier === FRONTIER_REASONING) && this.extendsRegion(piece)) {
      const delta = emptyDelta();
      if (this.frontier === FRONTIER_CONTENT) {
        this.released.content += piece;
        delta.content = piece;
      } else {
        this.released.thinking += piece;
        delta.thinking = piece;
      }
      return delta;
    }
    let step: NativeChatStep;
    try {
      step = this.parser.parseStep(this.text);
    } catch {
      this.frontier = FRONTIER_NONE;
      return emptyDelta();
    }
    const { delta, contentInSync, thinkingInSync } = advance(this.released, step, false);
    this.frontier = step.frontier;
    this.inSync = step.frontier === FRONTIER_CONTENT ? contentInSync : thinkingInSync;
    this.escape = 0;
    return delta;
  }

  finish(): ParsedDelta {
    return advance(this.released, this.parser.parse(this.text, false), true).delta;
  }

  private extendsRegion(piece: string): boolean {
    if (!this.inSync || this.stops === null) return false;
    for (let i = 0; i < piece.length; i++) {
      const c = piece.charCodeAt(i);
      if (isLoneSurrogate(piece, i, c)) return false;
      if (this.stops.has(c) && this.delimiters.some((d) => matchesAt(piece, i, d))) return false;
      if (c >= 0xd800 && c <= 0xdbff) i++;
    }
    return true;
  }

  private staysInString(piece: string): boolean {
    let escape = this.escape;
    for (let i = 0; i < piece.length; i++) {
      const c = piece.charCodeAt(i);
      if (isLoneSurrogate(piece, i, c)) return false;
      if (c >= 0xd800 && c <= 0xdbff) {
        if (escape !== 0) return false;
        i++;
      } else if (escape === 0) {
        if (c === QUOTE) return false;
        if (c === BACKSLASH) escape = 1;
      } else if (escape === 1) {
        if (c === 0x75) escape = 5;
        else if (SIMPLE_ESCAPES.has(c)) escape = 0;
        else return false;
      } else {
        if (!isHexDigit(c)) return false;
        escape = escape === 2 ? 0 : escape - 1;
      }
    }
    this.escape = escape;
    return true;
  }
}
