/**
 * Go formatting the `ollama` CLI's output depends on: `fmt`'s `%g`/`%v`, go-runewidth's display width and
 * olekukonko/tablewriter v0.0.5's borderless table (the one cmd/cmd.go `showInfo` renders).
 */

// Go's %.Nf and Ollama's HumanNumber are shared with the server's model details (src/common/format).
export { goFixed, humanNumber } from '../common/format';

/**
 * Display columns of one code point, as mattn/go-runewidth `RuneWidth` (East Asian wide and fullwidth characters
 * and emoji take 2, combining marks and zero-width characters 0, controls 0). The ranges are the common blocks, not
 * the full Unicode table.
 */
export function runeWidth(cp: number): number {
  if (cp === 0 || cp < 32 || (cp >= 0x7f && cp < 0xa0)) return 0;
  if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200f) || cp === 0xfeff) return 0;
  if (/\p{Mn}|\p{Me}/u.test(String.fromCodePoint(cp))) return 0;
  const wide: Array<[number, number]> = [
    [0x1100, 0x115f],
    [0x2e80, 0x303e],
    [0x3041, 0x33ff],
    [0x3400, 0x4dbf],
    [0x4e00, 0x9fff],
    [0xa000, 0xa4cf],
    [0xac00, 0xd7a3],
    [0xf900, 0xfaff],
    [0xfe30, 0xfe4f],
    [0xff00, 0xff60],
    [0xffe0, 0xffe6],
    [0x1f300, 0x1f64f],
    [0x1f900, 0x1f9ff],
    [0x20000, 0x3fffd],
  ];
  return wide.some(([a, b]) => cp >= a && cp <= b) ? 2 : 1;
}

/** go-runewidth `StringWidth`: the sum of the code points' widths. */
export function stringWidth(s: string): number {
  let w = 0;
  for (const ch of s) w += runeWidth(ch.codePointAt(0) ?? 0);
  return w;
}

/** Go's `strconv.FormatFloat(x, 'g', -1, 64)`, which is also `fmt`'s `%v` and `%g` for a float64 (`8e+09`, `0.5`). */
export function goFloat(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return '+Inf';
  if (x === -Infinity) return '-Inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const sign = x < 0 ? '-' : '';
  // toExponential() without a precision gives the shortest digits that round-trip, as Go's shortest formatting.
  const [mant, e] = Math.abs(x).toExponential().split('e');
  const digits = mant.replace('.', '');
  const exp = Number(e);
  if (exp < -4 || exp >= 6) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const ae = Math.abs(exp);
    return `${sign}${m}e${exp < 0 ? '-' : '+'}${ae < 10 ? `0${ae}` : ae}`;
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  if (digits.length <= exp + 1) return `${sign}${digits}${'0'.repeat(exp + 1 - digits.length)}`;
  return `${sign}${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
}

/**
 * `fmt.Sprintf("%v", v)` for a value decoded from JSON into Go's `any` (bool, float64, string, []any,
 * map[string]any, nil): `[a b c]`, `map[k:v]` (keys sorted), `<nil>`.
 */
export function goValue(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return goFloat(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (Array.isArray(v)) return `[${v.map(goValue).join(' ')}]`;
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o).sort();
    return `map[${keys.map((k) => `${k}:${goValue(o[k])}`).join(' ')}]`;
  }
  return String(v);
}

/** tablewriter's `WrapWords`: splits words into lines of at most `lim` columns with the least raggedness. */
function wrapWords(words: string[], spc: number, lim: number, pen: number): string[][] {
  const n = words.length;
  const widths = words.map(stringWidth);
  const nbrk = new Array<number>(n).fill(0);
  const cost = new Array<number>(n).fill(2147483647);
  for (let i = n - 1; i >= 0; i--) {
    let full = widths[i];
    for (let j = i + 1; j < n; j++) full += spc + widths[j];
    if (full <= lim) {
      cost[i] = 0;
      nbrk[i] = n;
      continue;
    }
    let len = widths[i]; // length[i][j-1]
    for (let j = i + 1; j < n; j++) {
      const d = lim - len;
      let c = d * d + cost[j];
      if (len > lim) c += pen;
      if (c < cost[i]) {
        cost[i] = c;
        nbrk[i] = j;
      }
      len += spc + widths[j];
    }
  }
  const lines: string[][] = [];
  for (let i = 0; i < n; ) {
    lines.push(words.slice(i, nbrk[i]));
    i = nbrk[i];
  }
  return lines;
}

/** tablewriter's `WrapString`: a paragraph wrapped to `lim` columns (a longer word raises the limit). */
function wrapString(s: string, lim: number): string[] {
  const words = s.replace(/\n/g, ' ').split(' ');
  for (const w of words) lim = Math.max(lim, stringWidth(w));
  return wrapWords(words, 1, lim, 1e5).map((l) => l.join(' '));
}

/**
 * A table as tablewriter v0.0.5 renders it with the settings of cmd/cmd.go `showInfo` (`SetBorder(false)`,
 * `SetNoWhiteSpace(true)`, `SetTablePadding("    ")`, left aligned, no header): every cell padded to its column's
 * width and followed by the padding (so lines end in spaces); cells wider than `colWidth` (30, or 100 via
 * `SetColWidth`) are word-wrapped onto more lines, paragraphs separated by a line holding one space.
 */
export function goTable(rows: string[][], colWidth = 30, padding = '    '): string {
  const colWidths: number[] = [];
  const cells = rows.map((row) =>
    row.map((cell, col) => {
      let lines = cell.split('\n');
      let maxWidth = Math.max(...lines.map(stringWidth));
      if (maxWidth > colWidth) maxWidth = colWidth;
      let newMax = maxWidth;
      const wrapped: string[] = [];
      lines.forEach((para, i) => {
        const paraLines = wrapString(para, maxWidth);
        for (const l of paraLines) newMax = Math.max(newMax, stringWidth(l));
        if (i > 0) wrapped.push(' ');
        wrapped.push(...paraLines);
      });
      lines = wrapped;
      maxWidth = newMax;
      if (colWidths[col] === undefined || colWidths[col] < maxWidth) colWidths[col] = maxWidth;
      return lines;
    }),
  );
  let out = '';
  for (const row of cells) {
    const height = Math.max(0, ...row.map((c) => c.length));
    for (let x = 0; x < height; x++) {
      for (let y = 0; y < row.length; y++) {
        const s = row[y][x] ?? '  ';
        out += s + ' '.repeat(Math.max(0, colWidths[y] - stringWidth(s))) + padding;
      }
      out += '\n';
    }
  }
  return out;
}
