/**
 * Numbers printed the way Go prints them, for the texts Ollama's server and CLI write: `%.Nf` and Ollama's
 * format.HumanNumber. Shared by the model details (`details.parameter_size`) and the CLI (`show`), which must agree
 * byte for byte.
 */

/**
 * Go's `%.Nf`: like toFixed, except that an exact tie (a binary value whose decimal expansion ends in 5 right after
 * the last digit kept, e.g. 2.25 at one decimal) rounds half to even (`2.2`) where toFixed rounds up.
 */
export function goFixed(v: number, decimals: number): string {
  const shortest = String(Math.abs(v));
  const m = /^(\d+)\.(\d+)$/.exec(shortest);
  if (m && m[2].length === decimals + 1 && m[2].endsWith('5')) {
    const n = BigInt(m[1] + m[2]);
    if (n % 5n ** BigInt(decimals + 1) === 0n) {
      // An exact tie: keep the even neighbour.
      const down = (n - 5n) / 10n;
      const kept = down % 2n === 0n ? down : down + 1n;
      const digits = kept.toString().padStart(decimals + 1, '0');
      const text = decimals > 0 ? `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}` : digits;
      return v < 0 ? `-${text}` : text;
    }
  }
  return v.toFixed(decimals);
}

/**
 * Ollama's format/format.go `HumanNumber` (`7B`, `2.8B`, `133.70M`, `512K`): ≥ 1e9 → billions with one decimal
 * (`8.0B` for 8_030_261_248, whole numbers bare: `7B`); ≥ 1e6 → millions with two decimals (`494.03M`, `567M`);
 * ≥ 1e3 → rounded thousands (`1K`); smaller numbers as they are. Fractions are truncated first.
 */
export function humanNumber(n: number): string {
  const v = Math.trunc(n);
  const scaled = (unit: number, digits: number, suffix: string): string => {
    const x = v / unit;
    return `${goFixed(x, x === Math.floor(x) ? 0 : digits)}${suffix}`;
  };
  if (v >= 1e9) return scaled(1e9, 1, 'B');
  if (v >= 1e6) return scaled(1e6, 2, 'M');
  if (v >= 1e3) return `${goFixed(v / 1e3, 0)}K`;
  return String(v);
}
