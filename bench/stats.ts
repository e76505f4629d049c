/**
 * Small statistics helpers for `npm run bench` (docs/benchmarks.md). Pure functions over plain numbers.
 */

/**
 * Median of `values` (mean of the two middle values for an even count).
 * @returns NaN for an empty array.
 */
export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/**
 * The p-th percentile (0..100) of `values` by linear interpolation between closest ranks (numpy's default).
 * @returns NaN for an empty array.
 * @throws RangeError when p is outside 0..100.
 */
export function percentile(values: readonly number[], p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile ${p} is outside 0..100`);
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return NaN;
  const sorted = [...finite].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

/** Differences between consecutive values: the gaps between token arrival times. */
export function gaps(times: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 1; i < times.length; i++) out.push(times[i] - times[i - 1]);
  return out;
}

/** Formats a number with `digits` decimals, or "n/a" when it is not finite. */
export function fmt(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

/** ours ÷ theirs as "0.98×", or "n/a" when either side is missing or zero. */
export function ratio(ours: number, theirs: number): string {
  return Number.isFinite(ours) && Number.isFinite(theirs) && theirs !== 0 ? `${(ours / theirs).toFixed(2)}×` : 'n/a';
}

/**
 * The median of the per-round ratios `a[i] ÷ b[i]` (rounds where either side is missing, not finite or `b` is 0 are
 * left out). Where two servers or variants take turns round by round, each ratio compares requests of the same
 * minute, so the host's drift over the run (±10 % on a shared VM) cancels within a round instead of entering both
 * sides' medians apart.
 * @returns NaN when no round has both figures.
 */
export function pairedRatio(a: readonly number[], b: readonly number[]): number {
  const ratios: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (Number.isFinite(a[i]) && Number.isFinite(b[i]) && b[i] !== 0) ratios.push(a[i] / b[i]);
  }
  return median(ratios);
}
