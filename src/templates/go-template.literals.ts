/**
 * Literal constants of Go `text/template` actions, decoded as Go's parser does (`text/template/parse/node.go`
 * newNumber, `strconv.Unquote`): quoted strings, raw strings, character constants and numbers.
 */
import { goQuote, Item, ItemType } from './go-template.tokens';
import { NumberNode } from './go-template.nodes';

/** A malformed literal; the parser reports its message with the template name and line. */
export class LiteralError extends Error {}

function fail(message: string): never {
  throw new LiteralError(message);
}

/** Parses Go's `strconv.Unquote` forms: "…" with escapes, `…` raw (carriage returns dropped), '…' char. */
export function goUnquote(q: string): string {
  if (q.startsWith('`')) {
    if (q.length < 2 || !q.endsWith('`')) throw new Error('invalid syntax');
    return q.slice(1, -1).replace(/\r/g, '');
  }
  const quote = q[0];
  if ((quote !== '"' && quote !== "'") || q.length < 2 || !q.endsWith(quote)) throw new Error('invalid syntax');
  const body = q.slice(1, -1);
  const bytes: number[] = [];
  const pushStr = (s: string): void => {
    for (const b of Buffer.from(s, 'utf8')) bytes.push(b);
  };
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c !== '\\') {
      if (c === quote || c === '\n') throw new Error('invalid syntax');
      const cp = body.codePointAt(i) ?? 0;
      const ch = String.fromCodePoint(cp);
      pushStr(ch);
      i += ch.length - 1;
      continue;
    }
    const e = body[++i];
    const simple: Record<string, string> = {
      a: '\x07',
      b: '\b',
      f: '\f',
      n: '\n',
      r: '\r',
      t: '\t',
      v: '\v',
      '\\': '\\',
    };
    if (e in simple) {
      pushStr(simple[e]);
    } else if (e === quote) {
      pushStr(e);
    } else if (e === 'x') {
      const h = body.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(h)) throw new Error('invalid syntax');
      bytes.push(parseInt(h, 16));
      i += 2;
    } else if (e === 'u' || e === 'U') {
      const n = e === 'u' ? 4 : 8;
      const h = body.slice(i + 1, i + 1 + n);
      if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(h)) throw new Error('invalid syntax');
      const cp = parseInt(h, 16);
      if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) throw new Error('invalid syntax');
      pushStr(String.fromCodePoint(cp));
      i += n;
    } else if (e >= '0' && e <= '7') {
      const o = body.slice(i, i + 3);
      if (!/^[0-7]{3}$/.test(o) || parseInt(o, 8) > 255) throw new Error('invalid syntax');
      bytes.push(parseInt(o, 8));
      i += 2;
    } else {
      throw new Error('invalid syntax');
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/**
 * The node of a number or character constant token: bigint for Go ints (decimal, hex, octal, binary, `_`
 * separators) and character constants, number for floats.
 * @throws LiteralError `complex constants are not supported: …`, `malformed character constant: …`,
 *   `illegal number syntax: "…"`.
 */
export function numberNode(t: Item): NumberNode {
  const text = t.val;
  if (t.typ === ItemType.Complex) fail(`complex constants are not supported: ${text}`);
  if (t.typ === ItemType.CharConstant) {
    let s: string;
    try {
      s = goUnquote(text);
    } catch {
      fail(`malformed character constant: ${text}`);
    }
    const cps = [...s];
    if (cps.length !== 1) fail(`malformed character constant: ${text}`);
    return { type: 'number', pos: t.pos, text, value: BigInt(cps[0].codePointAt(0) ?? 0) };
  }
  const clean = text.replace(/_/g, '');
  const isHex = /^[+-]?0[xX]/.test(clean);
  const isFloat = isHex ? /[pP.]/.test(clean) : /[.eE]/.test(clean);
  if (!isFloat) {
    try {
      const neg = clean.startsWith('-');
      let body = clean.replace(/^[+-]/, '');
      if (/^0[0-7]+$/.test(body)) body = '0o' + body.slice(1);
      const v = BigInt(body);
      return { type: 'number', pos: t.pos, text, value: neg ? -v : v };
    } catch {
      fail(`illegal number syntax: ${goQuote(text)}`);
    }
  }
  const f = Number(clean);
  if (Number.isNaN(f)) fail(`illegal number syntax: ${goQuote(text)}`);
  return { type: 'number', pos: t.pos, text, value: f };
}
