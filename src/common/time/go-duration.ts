/**
 * Go's `time.ParseDuration`, ported so `keep_alive` strings are accepted and rejected exactly as Ollama does
 * (reference/ollama-api.md §4.2). Error messages are Go's own text.
 */

const UNIT_NS: Record<string, number> = {
  ns: 1,
  us: 1e3,
  µs: 1e3, // U+00B5 micro sign
  μs: 1e3, // U+03BC Greek mu
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

/** Go's strconv.Quote for the strings that appear in these messages (plain JSON quoting is close enough). */
function quote(s: string): string {
  return JSON.stringify(s);
}

/**
 * Parses a Go duration string such as `"300ms"`, `"-1.5h"` or `"2h45m"`.
 * @returns the duration in nanoseconds (a float; sub-nanosecond fractions are kept, Go truncates them).
 * @throws Error with Go's message: `time: invalid duration "x"`, `time: missing unit in duration "300"`,
 *   `time: unknown unit "d" in duration "1d"`.
 */
export function parseGoDuration(input: string): number {
  const orig = input;
  let s = input;
  let negative = false;
  if (s !== '' && (s[0] === '-' || s[0] === '+')) {
    negative = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') throw new Error(`time: invalid duration ${quote(orig)}`);

  let total = 0;
  while (s !== '') {
    const numberMatch = /^([0-9]*)(?:\.([0-9]*))?/.exec(s);
    const intPart = numberMatch?.[1] ?? '';
    const fracPart = numberMatch?.[2];
    const consumed = numberMatch?.[0].length ?? 0;
    if (intPart === '' && (fracPart === undefined || fracPart === '')) {
      throw new Error(`time: invalid duration ${quote(orig)}`);
    }
    s = s.slice(consumed);
    let unitEnd = 0;
    while (unitEnd < s.length && !/[0-9.]/.test(s[unitEnd])) unitEnd++;
    if (unitEnd === 0) throw new Error(`time: missing unit in duration ${quote(orig)}`);
    const unit = s.slice(0, unitEnd);
    s = s.slice(unitEnd);
    const scale = UNIT_NS[unit];
    if (scale === undefined) throw new Error(`time: unknown unit ${quote(unit)} in duration ${quote(orig)}`);
    const value = Number(`${intPart || '0'}.${fracPart ?? ''}0`);
    total += value * scale;
    if (total > Number.MAX_SAFE_INTEGER * 1024) throw new Error(`time: invalid duration ${quote(orig)}`);
  }
  return negative ? -total : total;
}
