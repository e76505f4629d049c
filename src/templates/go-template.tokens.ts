/**
 * Token types of Go `text/template` source and the character classes the lexer needs, mirroring the item types and
 * helpers of Go's `text/template/parse/lex.go` (the state machine itself is in go-template.lexer.ts).
 */

export enum ItemType {
  Error,
  Bool,
  Char,
  CharConstant,
  Comment,
  Complex,
  Assign,
  Declare,
  EOF,
  Field,
  Identifier,
  LeftDelim,
  LeftParen,
  Number,
  Pipe,
  RawString,
  RightDelim,
  RightParen,
  Space,
  String,
  Text,
  Variable,
  // Keywords come after all the above.
  Keyword,
  Block,
  Break,
  Continue,
  Dot,
  Define,
  Else,
  End,
  If,
  Nil,
  Range,
  Template,
  With,
}

/** One lexed token: its type, text, byte-ish offset (UTF-16 index) and 1-based line. */
export interface Item {
  typ: ItemType;
  val: string;
  pos: number;
  line: number;
}

/** Words lexed as keywords (and `.` as Dot); other identifiers are functions, `true`/`false` bools. */
export const KEYWORDS: Record<string, ItemType> = {
  '.': ItemType.Dot,
  block: ItemType.Block,
  break: ItemType.Break,
  continue: ItemType.Continue,
  define: ItemType.Define,
  else: ItemType.Else,
  end: ItemType.End,
  if: ItemType.If,
  range: ItemType.Range,
  nil: ItemType.Nil,
  template: ItemType.Template,
  with: ItemType.With,
};

/** Action delimiters, comment markers and the length of a trim marker (`- ` / ` -`). */
export const LEFT_DELIM = '{{';
export const RIGHT_DELIM = '}}';
export const LEFT_COMMENT = '/*';
export const RIGHT_COMMENT = '*/';
export const TRIM_MARKER_LEN = 2;

/** Go's `%q` of an item, as used in parse error messages (`unexpected "}" in operand`). */
export function itemString(i: Item): string {
  if (i.typ === ItemType.EOF) return 'EOF';
  if (i.typ === ItemType.Error) return i.val;
  if (i.typ > ItemType.Keyword) return `<${i.val}>`;
  if ([...i.val].length > 10) return `${goQuote([...i.val].slice(0, 10).join(''))}...`;
  return goQuote(i.val);
}

/** Go's strconv.Quote (printable non-ASCII kept as is). */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    switch (ch) {
      case '"':
        out += '\\"';
        continue;
      case '\\':
        out += '\\\\';
        continue;
      case '\x07':
        out += '\\a';
        continue;
      case '\b':
        out += '\\b';
        continue;
      case '\f':
        out += '\\f';
        continue;
      case '\n':
        out += '\\n';
        continue;
      case '\r':
        out += '\\r';
        continue;
      case '\t':
        out += '\\t';
        continue;
      case '\v':
        out += '\\v';
        continue;
    }
    if (c < 0x20 || c === 0x7f) out += '\\x' + c.toString(16).padStart(2, '0');
    else if (c >= 0x80 && c < 0xa0) out += '\\u' + c.toString(16).padStart(4, '0');
    else if (c >= 0xd800 && c <= 0xdfff) out += '\\ufffd';
    else out += ch;
  }
  return out + '"';
}

/** Go's isSpace of lex.go: space, tab, carriage return, newline. */
export function isSpace(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\r' || c === '\n';
}

/** Go's isAlphaNumeric: `_`, a Unicode letter or a decimal digit. */
export function isAlphaNumeric(c: string): boolean {
  return c === '_' || /^[\p{L}\p{Nd}]$/u.test(c);
}

/** Whether `s` has a left trim marker (`- `) at `at`, right after `{{`. */
export function hasLeftTrimMarker(s: string, at: number): boolean {
  return s.length - at >= 2 && s[at] === '-' && isSpace(s[at + 1]);
}

/** Whether `s` has a right trim marker (` -`) at `at`, right before `}}`. */
export function hasRightTrimMarker(s: string, at: number): boolean {
  return s.length - at >= 2 && isSpace(s[at]) && s[at + 1] === '-';
}

/** Length of the trailing white space of `s` (trimmed before a `{{- `). */
export function rightTrimLength(s: string): number {
  return s.length - s.replace(/[ \t\r\n]+$/, '').length;
}

/** Length of the white space starting at `at` (trimmed after a ` -}}`). */
export function leftTrimLength(s: string, at: number): number {
  let i = at;
  while (i < s.length && isSpace(s[i])) i++;
  return i - at;
}

/** Number of newlines in `s` between `from` and `to`. */
export function countNewlines(s: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to && i < s.length; i++) if (s[i] === '\n') n++;
  return n;
}
