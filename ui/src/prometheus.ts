/** One sample of the Prometheus text format: metric name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Parses the Prometheus text exposition format (what GET /metrics answers): comments skipped, labels unescaped,
 * `NaN`/`+Inf` as numbers. Lines it cannot read are skipped.
 */
export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    const labelText = match[2] ?? '';
    for (const pair of labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]] = pair[2].replace(/\\n/g, '\n').replace(/\\(.)/g, '$1');
    }
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of every sample named `name` (all label sets). */
export function total(samples: Sample[], name: string): number {
  return samples.filter((s) => s.name === name).reduce((sum, s) => sum + s.value, 0);
}

/** Cumulative bucket counts of histogram `name` summed over its label sets (other than `le`), by upper bound. */
export function histogramBuckets(samples: Sample[], name: string): Map<number, number> {
  const buckets = new Map<number, number>();
  for (const s of samples) {
    if (s.name !== `${name}_bucket`) continue;
    const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + s.value);
  }
  return buckets;
}

/**
 * The q-quantile (0..1) of the observations between two scrapes of a histogram (`now` minus `before`, cumulative
 * counts by upper bound), interpolated linearly inside the bucket as Prometheus' histogram_quantile does; undefined
 * when nothing was observed in between.
 */
export function quantile(q: number, now: Map<number, number>, before?: Map<number, number>): number | undefined {
  const bounds = [...now.keys()].sort((a, b) => a - b);
  const counts = bounds.map((b) => (now.get(b) ?? 0) - (before?.get(b) ?? 0));
  const count = counts.at(-1) ?? 0;
  if (count <= 0) return undefined;
  const rank = q * count;
  for (let i = 0; i < bounds.length; i++) {
    if (counts[i] >= rank) {
      const lower = i === 0 ? 0 : bounds[i - 1];
      const upper = bounds[i];
      if (upper === Infinity) return lower;
      const below = i === 0 ? 0 : counts[i - 1];
      const inBucket = counts[i] - below;
      return inBucket <= 0 ? upper : lower + ((upper - lower) * (rank - below)) / inBucket;
    }
  }
  return undefined;
}
