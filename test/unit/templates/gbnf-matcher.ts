/**
 * A small GBNF recognizer for tests: parses a grammar in llama.cpp's format (one rule a line, as buildToolCallGrammar
 * and json_schema_to_grammar write them: literals with \n \r \t \" \\ \xHH \uHHHH escapes, character classes with
 * ranges and negation, rule references, groups, `|`, `?`, `*`, `+`, `{m}`, `{m,}`, `{m,n}`) and tells whether a
 * whole text is in the language of `root`. Every match position is tracked (no backtracking limits), so it is exact
 * but meant for short texts only.
 */

type Expr =
  | { k: 'lit'; cps: number[] }
  | { k: 'cls'; neg: boolean; ranges: [number, number][] }
  | { k: 'ref'; name: string }
  | { k: 'seq'; items: Expr[] }
  | { k: 'alt'; items: Expr[] }
  | { k: 'rep'; e: Expr; min: number; max: number };

/** Reads one (possibly escaped) character at `i`; returns its code point and the next index. */
function readChar(src: string, i: number): [number, number] {
  if (src[i] !== '\\') {
    const cp = src.codePointAt(i)!;
    return [cp, i + (cp > 0xffff ? 2 : 1)];
  }
  const c = src[i + 1];
  const simple: Record<string, number> = { n: 10, r: 13, t: 9, '"': 34, '\\': 92, '[': 91, ']': 93, '-': 45, '/': 47 };
  if (c in simple) return [simple[c], i + 2];
  const width = c === 'x' ? 2 : c === 'u' ? 4 : c === 'U' ? 8 : 0;
  if (width === 0) throw new Error(`bad escape \\${c} at ${i}`);
  return [parseInt(src.slice(i + 2, i + 2 + width), 16), i + 2 + width];
}

class Parser {
  i = 0;
  constructor(private readonly src: string) {}

  private ws(): void {
    while (this.i < this.src.length && /\s/.test(this.src[this.i])) this.i++;
  }

  alt(): Expr {
    const items = [this.seq()];
    this.ws();
    while (this.src[this.i] === '|') {
      this.i++;
      items.push(this.seq());
      this.ws();
    }
    return items.length === 1 ? items[0] : { k: 'alt', items };
  }

  private seq(): Expr {
    const items: Expr[] = [];
    for (;;) {
      this.ws();
      const c = this.src[this.i];
      if (c === undefined || c === '|' || c === ')') break;
      items.push(this.postfix(this.atom()));
    }
    return { k: 'seq', items };
  }

  private atom(): Expr {
    const c = this.src[this.i];
    if (c === '"') {
      this.i++;
      const cps: number[] = [];
      while (this.src[this.i] !== '"') {
        const [cp, next] = readChar(this.src, this.i);
        cps.push(cp);
        this.i = next;
      }
      this.i++;
      return { k: 'lit', cps };
    }
    if (c === '[') {
      this.i++;
      const neg = this.src[this.i] === '^';
      if (neg) this.i++;
      const ranges: [number, number][] = [];
      while (this.src[this.i] !== ']') {
        const [lo, next] = readChar(this.src, this.i);
        this.i = next;
        if (this.src[this.i] === '-' && this.src[this.i + 1] !== ']') {
          const [hi, after] = readChar(this.src, this.i + 1);
          this.i = after;
          ranges.push([lo, hi]);
        } else ranges.push([lo, lo]);
      }
      this.i++;
      return { k: 'cls', neg, ranges };
    }
    if (c === '(') {
      this.i++;
      const e = this.alt();
      this.ws();
      if (this.src[this.i] !== ')') throw new Error(`expected ) at ${this.i}`);
      this.i++;
      return e;
    }
    const m = /^[a-zA-Z0-9-]+/.exec(this.src.slice(this.i));
    if (!m) throw new Error(`unexpected ${JSON.stringify(c)} at ${this.i} in ${this.src}`);
    this.i += m[0].length;
    return { k: 'ref', name: m[0] };
  }

  private postfix(e: Expr): Expr {
    for (;;) {
      const c = this.src[this.i];
      if (c === '?') e = { k: 'rep', e, min: 0, max: 1 };
      else if (c === '*') e = { k: 'rep', e, min: 0, max: Infinity };
      else if (c === '+') e = { k: 'rep', e, min: 1, max: Infinity };
      else if (c === '{') {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
        if (!m) throw new Error(`bad repetition at ${this.i}`);
        const min = Number(m[1]);
        const max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
        e = { k: 'rep', e, min, max };
        this.i += m[0].length - 1;
      } else return e;
      this.i++;
    }
  }
}

/** A parsed grammar: rule name → expression. */
export type Grammar = Map<string, Expr>;

/**
 * Parses GBNF text (one `name ::= …` rule per line; `#` comment lines and blank lines skipped).
 * @throws Error on syntax this recognizer does not know, or a reference to a missing rule.
 */
export function parseGbnf(text: string): Grammar {
  const rules: Grammar = new Map();
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.trim().startsWith('#')) continue;
    const m = /^([a-zA-Z0-9-]+) ::= ?(.*)$/.exec(line);
    if (!m) throw new Error(`not a rule: ${line}`);
    if (rules.has(m[1])) throw new Error(`rule defined twice: ${m[1]}`);
    const p = new Parser(m[2]);
    rules.set(m[1], p.alt());
    if (p.i < m[2].length) throw new Error(`trailing text in rule ${m[1]}: ${m[2].slice(p.i)}`);
  }
  const check = (e: Expr): void => {
    if (e.k === 'ref' && !rules.has(e.name)) throw new Error(`undefined rule ${e.name}`);
    if (e.k === 'seq' || e.k === 'alt') e.items.forEach(check);
    if (e.k === 'rep') check(e.e);
  };
  rules.forEach(check);
  return rules;
}

/** Whether the whole `text` matches rule `start` (default root) of `grammar`. */
export function gbnfAccepts(grammar: Grammar | string, text: string, start = 'root'): boolean {
  const g = typeof grammar === 'string' ? parseGbnf(grammar) : grammar;
  const cps = Array.from(text, (ch) => ch.codePointAt(0)!);
  const memo = new Map<string, Set<number>>();
  const match = (e: Expr, pos: number): Set<number> => {
    switch (e.k) {
      case 'lit': {
        for (let j = 0; j < e.cps.length; j++) if (cps[pos + j] !== e.cps[j]) return new Set();
        return new Set([pos + e.cps.length]);
      }
      case 'cls': {
        if (pos >= cps.length) return new Set();
        const inside = e.ranges.some(([lo, hi]) => cps[pos] >= lo && cps[pos] <= hi);
        return inside !== e.neg ? new Set([pos + 1]) : new Set();
      }
      case 'ref': {
        const key = `${e.name}@${pos}`;
        const hit = memo.get(key);
        if (hit) return hit;
        memo.set(key, new Set());
        const r = match(g.get(e.name)!, pos);
        memo.set(key, r);
        return r;
      }
      case 'seq': {
        let at = new Set([pos]);
        for (const item of e.items) {
          const next = new Set<number>();
          for (const p of at) for (const q of match(item, p)) next.add(q);
          at = next;
          if (at.size === 0) break;
        }
        return at;
      }
      case 'alt': {
        const out = new Set<number>();
        for (const item of e.items) for (const q of match(item, pos)) out.add(q);
        return out;
      }
      case 'rep': {
        const out = new Set<number>();
        // Past the minimum, a position expanded once (with at least as many repetitions left) adds nothing new.
        const expanded = new Set<number>();
        let frontier = new Set([pos]);
        for (let n = 0; frontier.size > 0; n++) {
          if (n >= e.min) for (const p of frontier) out.add(p);
          if (n >= e.max) break;
          const next = new Set<number>();
          for (const p of frontier) {
            if (n >= e.min) {
              if (expanded.has(p)) continue;
              expanded.add(p);
            }
            for (const q of match(e.e, p)) next.add(q);
          }
          frontier = next;
        }
        return out;
      }
    }
  };
  return match({ k: 'ref', name: start }, 0).has(cps.length);
}
