/**
 * Lexer for Go `text/template` source, mirroring Go's `text/template/parse/lex.go` (delimiters `{{` `}}`, trim
 * markers `{{- ` / ` -}}`, comments `{{/* *\/}}`, newlines allowed inside actions): the Lexer and its state
 * functions. Token types and character classes: go-template.tokens.ts.
 */
import {
  countNewlines,
  goQuote,
  hasLeftTrimMarker,
  hasRightTrimMarker,
  isAlphaNumeric,
  isSpace,
  Item,
  ItemType,
  KEYWORDS,
  LEFT_COMMENT,
  LEFT_DELIM,
  leftTrimLength,
  RIGHT_COMMENT,
  RIGHT_DELIM,
  rightTrimLength,
  TRIM_MARKER_LEN,
} from './go-template.tokens';

export { goQuote, Item, ItemType, itemString } from './go-template.tokens';

type StateFn = ((l: Lexer) => StateFn) | null;

/**
 * Tokenizes a whole template. Lexing stops at the first error, which is returned as an `ItemType.Error` item so the
 * parser reports it in order (as Go's on-demand lexer does).
 */
export class Lexer {
  readonly items: Item[] = [];
  private pos = 0;
  private start = 0;
  private line = 1;
  private startLine = 1;
  private parenDepth = 0;
  private done = false;

  constructor(
    private readonly input: string,
    private readonly emitComments = false,
  ) {}

  /** Runs the state machine to completion; the last item is EOF or Error. */
  run(): Item[] {
    let state: StateFn = lexText;
    while (state && !this.done) state = state(this);
    return this.items;
  }

  // --- helpers used by the state functions ---
  get rest(): string {
    return this.input.slice(this.pos);
  }

  next(): string {
    if (this.pos >= this.input.length) {
      this.pos++; // so backup() works symmetrically
      return '';
    }
    const c = this.input[this.pos++];
    if (c === '\n') this.line++;
    return c;
  }

  peek(): string {
    return this.pos < this.input.length ? this.input[this.pos] : '';
  }

  backup(): void {
    this.pos--;
    if (this.pos < this.input.length && this.input[this.pos] === '\n') this.line--;
  }

  emit(typ: ItemType): StateFn {
    this.items.push({ typ, val: this.input.slice(this.start, this.pos), pos: this.start, line: this.startLine });
    this.start = this.pos;
    this.startLine = this.line;
    if (typ === ItemType.EOF) this.done = true;
    return null;
  }

  ignore(): void {
    // account for skipped newlines
    this.line = this.startLine + countNewlines(this.input, this.start, this.pos);
    this.start = this.pos;
    this.startLine = this.line;
  }

  accept(valid: string): boolean {
    const c = this.next();
    if (c !== '' && valid.includes(c)) return true;
    this.backup();
    return false;
  }

  acceptRun(valid: string): void {
    for (;;) {
      const c = this.next();
      if (c === '' || !valid.includes(c)) break;
    }
    this.backup();
  }

  errorf(msg: string): StateFn {
    this.items.push({ typ: ItemType.Error, val: msg, pos: this.start, line: this.startLine });
    this.done = true;
    return null;
  }

  atRightDelim(): { delim: boolean; trimSpaces: boolean } {
    if (hasRightTrimMarker(this.input, this.pos) && this.input.startsWith(RIGHT_DELIM, this.pos + TRIM_MARKER_LEN)) {
      return { delim: true, trimSpaces: true };
    }
    if (this.input.startsWith(RIGHT_DELIM, this.pos)) return { delim: true, trimSpaces: false };
    return { delim: false, trimSpaces: false };
  }

  atTerminator(): boolean {
    const r = this.peek();
    if (r === '' || isSpace(r)) return true;
    if ('.,|:)('.includes(r)) return true;
    return this.input.startsWith(RIGHT_DELIM, this.pos);
  }

  // state functions need these
  setPos(p: number): void {
    if (p >= this.pos) this.line += countNewlines(this.input, this.pos, p);
    else this.line -= countNewlines(this.input, p, this.pos);
    this.pos = p;
  }
  get position(): number {
    return this.pos;
  }
  get startPos(): number {
    return this.start;
  }
  get inputText(): string {
    return this.input;
  }
  get depth(): number {
    return this.parenDepth;
  }
  set depth(d: number) {
    this.parenDepth = d;
  }
  get wantComments(): boolean {
    return this.emitComments;
  }
}

function lexText(l: Lexer): StateFn {
  const input = l.inputText;
  const x = input.indexOf(LEFT_DELIM, l.position);
  if (x >= 0) {
    if (x > l.position) {
      l.setPos(x);
      let trim = 0;
      if (hasLeftTrimMarker(input, x + LEFT_DELIM.length)) trim = rightTrimLength(input.slice(l.startPos, x));
      l.setPos(x - trim);
      if (l.position > l.startPos) l.emit(ItemType.Text);
      l.setPos(x);
      l.ignore();
    }
    return lexLeftDelim;
  }
  l.setPos(input.length);
  if (l.position > l.startPos) l.emit(ItemType.Text);
  l.emit(ItemType.EOF);
  return null;
}

function lexLeftDelim(l: Lexer): StateFn {
  const input = l.inputText;
  l.setPos(l.position + LEFT_DELIM.length);
  const trimSpace = hasLeftTrimMarker(input, l.position);
  const afterMarker = trimSpace ? TRIM_MARKER_LEN : 0;
  if (input.startsWith(LEFT_COMMENT, l.position + afterMarker)) {
    l.setPos(l.position + afterMarker);
    l.ignore();
    return lexComment;
  }
  l.emit(ItemType.LeftDelim);
  l.setPos(l.position + afterMarker);
  l.ignore();
  l.depth = 0;
  return lexInsideAction;
}

function lexComment(l: Lexer): StateFn {
  const input = l.inputText;
  l.setPos(l.position + LEFT_COMMENT.length);
  const x = input.indexOf(RIGHT_COMMENT, l.position);
  if (x < 0) return l.errorf('unclosed comment');
  l.setPos(x + RIGHT_COMMENT.length);
  const { delim, trimSpaces } = l.atRightDelim();
  if (!delim) return l.errorf('comment ends before closing delimiter');
  if (l.wantComments) l.emit(ItemType.Comment);
  if (trimSpaces) l.setPos(l.position + TRIM_MARKER_LEN);
  l.setPos(l.position + RIGHT_DELIM.length);
  if (trimSpaces) l.setPos(l.position + leftTrimLength(input, l.position));
  l.ignore();
  return lexText;
}

function lexRightDelim(l: Lexer): StateFn {
  const { trimSpaces } = l.atRightDelim();
  if (trimSpaces) {
    l.setPos(l.position + TRIM_MARKER_LEN);
    l.ignore();
  }
  l.setPos(l.position + RIGHT_DELIM.length);
  l.emit(ItemType.RightDelim);
  if (trimSpaces) {
    l.setPos(l.position + leftTrimLength(l.inputText, l.position));
    l.ignore();
  }
  return lexText;
}

function lexInsideAction(l: Lexer): StateFn {
  const { delim } = l.atRightDelim();
  if (delim) {
    if (l.depth === 0) return lexRightDelim;
    return l.errorf('unclosed left paren');
  }
  const r = l.next();
  if (r === '') return l.errorf('unclosed action');
  if (isSpace(r)) {
    l.backup();
    return lexSpace;
  }
  switch (r) {
    case '=':
      l.emit(ItemType.Assign);
      return lexInsideAction;
    case ':':
      if (l.next() !== '=') return l.errorf('expected :=');
      l.emit(ItemType.Declare);
      return lexInsideAction;
    case '|':
      l.emit(ItemType.Pipe);
      return lexInsideAction;
    case '"':
      return lexQuote;
    case '`':
      return lexRawQuote;
    case '$':
      return lexVariable;
    case "'":
      return lexChar;
    case '(':
      l.emit(ItemType.LeftParen);
      l.depth++;
      return lexInsideAction;
    case ')':
      l.depth--;
      if (l.depth < 0) return l.errorf('unexpected right paren');
      l.emit(ItemType.RightParen);
      return lexInsideAction;
  }
  if (r === '.') {
    const p = l.peek();
    if (p === '' || p < '0' || p > '9') return lexField;
  }
  if (r === '.' || r === '+' || r === '-' || (r >= '0' && r <= '9')) {
    l.backup();
    return lexNumber;
  }
  if (isAlphaNumeric(r)) {
    l.backup();
    return lexIdentifier;
  }
  const code = r.codePointAt(0) ?? 0;
  if (code <= 0x7f && code >= 0x20 && code !== 0x7f) {
    l.emit(ItemType.Char);
    return lexInsideAction;
  }
  return l.errorf(`unrecognized character in action: U+${code.toString(16).toUpperCase().padStart(4, '0')}`);
}

function lexSpace(l: Lexer): StateFn {
  let numSpaces = 0;
  while (isSpace(l.peek())) {
    l.next();
    numSpaces++;
  }
  const input = l.inputText;
  if (hasRightTrimMarker(input, l.position - 1) && input.startsWith(RIGHT_DELIM, l.position - 1 + TRIM_MARKER_LEN)) {
    l.backup();
    if (numSpaces === 1) return lexRightDelim;
  }
  l.emit(ItemType.Space);
  return lexInsideAction;
}

function lexIdentifier(l: Lexer): StateFn {
  for (;;) {
    const r = l.next();
    if (r !== '' && isAlphaNumeric(r)) continue;
    l.backup();
    const word = l.inputText.slice(l.startPos, l.position);
    if (!l.atTerminator()) return l.errorf(`bad character ${goRuneU(r)}`);
    const kw = KEYWORDS[word];
    if (kw !== undefined && kw > ItemType.Keyword) l.emit(kw);
    else if (word[0] === '.') l.emit(ItemType.Field);
    else if (word === 'true' || word === 'false') l.emit(ItemType.Bool);
    else l.emit(ItemType.Identifier);
    return lexInsideAction;
  }
}

function goRuneU(r: string): string {
  const c = r.codePointAt(0) ?? 0;
  return `U+${c.toString(16).toUpperCase().padStart(4, '0')} '${r}'`;
}

function lexFieldOrVariable(l: Lexer, typ: ItemType): StateFn {
  if (l.atTerminator()) {
    l.emit(typ === ItemType.Variable ? ItemType.Variable : ItemType.Dot);
    return lexInsideAction;
  }
  let r: string;
  for (;;) {
    r = l.next();
    if (r === '' || !isAlphaNumeric(r)) {
      l.backup();
      break;
    }
  }
  if (!l.atTerminator()) return l.errorf(`bad character ${goRuneU(l.peek())}`);
  l.emit(typ);
  return lexInsideAction;
}

function lexField(l: Lexer): StateFn {
  return lexFieldOrVariable(l, ItemType.Field);
}

function lexVariable(l: Lexer): StateFn {
  return lexFieldOrVariable(l, ItemType.Variable);
}

function lexChar(l: Lexer): StateFn {
  for (;;) {
    const r = l.next();
    if (r === '\\') {
      const n = l.next();
      if (n !== '' && n !== '\n') continue;
      return l.errorf('unterminated character constant');
    }
    if (r === '' || r === '\n') return l.errorf('unterminated character constant');
    if (r === "'") break;
  }
  l.emit(ItemType.CharConstant);
  return lexInsideAction;
}

function lexNumber(l: Lexer): StateFn {
  if (!scanNumber(l)) return l.errorf(`bad number syntax: ${goQuote(l.inputText.slice(l.startPos, l.position))}`);
  const sign = l.peek();
  if (sign === '+' || sign === '-') {
    if (!scanNumber(l) || l.inputText[l.position - 1] !== 'i') {
      return l.errorf(`bad number syntax: ${goQuote(l.inputText.slice(l.startPos, l.position))}`);
    }
    l.emit(ItemType.Complex);
  } else {
    l.emit(ItemType.Number);
  }
  return lexInsideAction;
}

function scanNumber(l: Lexer): boolean {
  l.accept('+-');
  let digits = '0123456789_';
  if (l.accept('0')) {
    if (l.accept('xX')) digits = '0123456789abcdefABCDEF_';
    else if (l.accept('oO')) digits = '01234567_';
    else if (l.accept('bB')) digits = '01_';
  }
  l.acceptRun(digits);
  if (l.accept('.')) l.acceptRun(digits);
  if (digits.length === 11 && l.accept('eE')) {
    l.accept('+-');
    l.acceptRun('0123456789_');
  }
  if (digits.length === 23 && l.accept('pP')) {
    l.accept('+-');
    l.acceptRun('0123456789_');
  }
  l.accept('i');
  const p = l.peek();
  if (p !== '' && isAlphaNumeric(p)) {
    l.next();
    return false;
  }
  return true;
}

function lexQuote(l: Lexer): StateFn {
  for (;;) {
    const r = l.next();
    if (r === '\\') {
      const n = l.next();
      if (n !== '' && n !== '\n') continue;
      return l.errorf('unterminated quoted string');
    }
    if (r === '' || r === '\n') return l.errorf('unterminated quoted string');
    if (r === '"') break;
  }
  l.emit(ItemType.String);
  return lexInsideAction;
}

function lexRawQuote(l: Lexer): StateFn {
  for (;;) {
    const r = l.next();
    if (r === '') return l.errorf('unterminated raw quoted string');
    if (r === '`') break;
  }
  l.emit(ItemType.RawString);
  return lexInsideAction;
}

/** Lexes `input` into items (ending with EOF or an Error item). */
export function lex(input: string, emitComments = false): Item[] {
  return new Lexer(input, emitComments).run();
}
