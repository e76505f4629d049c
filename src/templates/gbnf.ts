/**
 * Small GBNF building blocks (llama.cpp's grammar format, reference native-core.md): literals, a rule renamer for
 * composing grammars made by json_schema_to_grammar, and "any text up to a delimiter" rules. Pure string code.
 */

/** A code point as a GBNF escape (`\xHH`, `\uHHHH` or `\UHHHHHHHH`), valid inside literals and char classes. */
function escapeCodePoint(cp: number): string {
  if (cp < 0x100) return `\\x${cp.toString(16).padStart(2, '0')}`;
  if (cp < 0x10000) return `\\u${cp.toString(16).padStart(4, '0')}`;
  return `\\U${cp.toString(16).padStart(8, '0')}`;
}

/**
 * `s` as a GBNF string literal: `"`, `\` and control characters escaped, other characters (UTF-8) as they are.
 * `gbnfLiteral('a"b')` → `"a\"b"`.
 */
export function gbnfLiteral(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0) ?? 0;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (cp < 0x20 || cp === 0x7f) out += escapeCodePoint(cp);
    else out += ch;
  }
  return `${out}"`;
}

/** A GBNF character class of the given characters (`negate`: every character but them), each one escaped. */
export function gbnfCharClass(chars: Iterable<string>, negate = false): string {
  let body = '';
  for (const ch of chars) body += escapeCodePoint(ch.codePointAt(0) ?? 0);
  return `[${negate ? '^' : ''}${body}]`;
}

function isWordChar(c: string): boolean {
  return /[a-zA-Z0-9-]/.test(c);
}

/** Copies a quoted/bracketed span (`"…"`, `[…]`, `<…>`) starting at `i` up to its closing `close`; escape-aware. */
function spanEnd(text: string, i: number, close: string): number {
  let j = i + 1;
  while (j < text.length && text[j] !== close) j += text[j] === '\\' ? 2 : 1;
  return Math.min(j + 1, text.length);
}

/**
 * Renames every rule of a GBNF grammar (definitions and references) to `prefix + name`, leaving string literals,
 * character classes, repetition counts (`{m,n}`), token references (`<…>`) and comments alone. Used to put several
 * json_schema_to_grammar outputs (each with its own `root`, `space`, …) into one grammar without clashes.
 * `prefixRules('root ::= a\na ::= "x"', 't0-')` → `t0-root ::= t0-a\nt0-a ::= "x"`.
 */
export function prefixRules(grammar: string, prefix: string): string {
  let out = '';
  let i = 0;
  while (i < grammar.length) {
    const c = grammar[i];
    if (c === '"' || c === '[' || c === '<' || c === '{') {
      const end = spanEnd(grammar, i, c === '"' ? '"' : c === '[' ? ']' : c === '<' ? '>' : '}');
      out += grammar.slice(i, end);
      i = end;
    } else if (c === '#') {
      const nl = grammar.indexOf('\n', i);
      const end = nl < 0 ? grammar.length : nl;
      out += grammar.slice(i, end);
      i = end;
    } else if (isWordChar(c)) {
      let j = i;
      while (j < grammar.length && isWordChar(grammar[j])) j++;
      out += prefix + grammar.slice(i, j);
      i = j;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/**
 * Rules `<name>-0 … <name>-(n-1)` where `<name>-0` matches any text that does not contain `delimiter`, followed by
 * the delimiter itself (the first occurrence ends the match). Built as the matching automaton of the delimiter
 * (Knuth–Morris–Pratt states: state k = the last k characters read are the delimiter's first k), one right-recursive
 * rule per state, so llama.cpp's grammar stack does not grow with the text. Returns the rule lines.
 * @throws Error when `delimiter` is empty.
 */
export function untilRules(name: string, delimiter: string): string[] {
  const d = Array.from(delimiter);
  if (d.length === 0) throw new Error('untilRules: empty delimiter');
  const alphabet = [...new Set(d)];
  // next(k, c): the longest prefix of the delimiter that is a suffix of its first k characters + c.
  const next = (k: number, c: string): number => {
    const read = [...d.slice(0, k), c].join('');
    for (let j = Math.min(k + 1, d.length); j > 0; j--) if (read.endsWith(d.slice(0, j).join(''))) return j;
    return 0;
  };
  const rules: string[] = [];
  for (let k = 0; k < d.length; k++) {
    const alts: string[] = [];
    const expected = d[k];
    alts.push(k === d.length - 1 ? gbnfLiteral(expected) : `${gbnfLiteral(expected)} ${name}-${k + 1}`);
    const special = [expected];
    for (const c of alphabet) {
      const j = c === expected ? 0 : next(k, c);
      if (j === 0) continue;
      alts.push(`${gbnfLiteral(c)} ${name}-${j}`);
      special.push(c);
    }
    // Every other character starts over.
    alts.push(`${gbnfCharClass(special, true)} ${name}-0`);
    rules.push(`${name}-${k} ::= ${alts.join(' | ')}`);
  }
  return rules;
}
