import type { Registry } from 'prom-client';
import type { InterTokenObserver } from '../../observability';

/** One label value's buckets: counts per upper bound (cumulated only when scraped), sum and count. */
class Series implements InterTokenObserver {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length);
  }

  /** Adds one value: a scan of the bounds and three number updates, no allocation. */
  observe(value: number): void {
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        this.counts[i]++;
        break;
      }
    }
    this.sum += value;
    this.count++;
  }
}

/** A sample of the exposition: what prom-client's registry formats (`metricName{labels} value`). */
interface Sample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/**
 * A Prometheus histogram with one label, for values observed on the hot path (once per generated token): prom-client's
 * Histogram allocates on every `observe` (a label hash and a closure), this one does not — each label value owns a
 * preallocated bucket array ({@link child}, made once per generation) and the cumulative buckets are built only when
 * scraped. Registered in a prom-client Registry like any metric (type `histogram`, `_bucket`/`_sum`/`_count`).
 */
export class PerTokenHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Series>();
  private readonly bounds: readonly number[];

  /**
   * @param buckets upper bounds, ascending (`+Inf` is added).
   * @param registers registries to add it to.
   */
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: string,
    buckets: readonly number[],
    registers: Registry[],
  ) {
    this.bounds = [...buckets].sort((a, b) => a - b);
    // prom-client's Registry accepts any object with the Metric surface it reads (name, help, type, get()).
    for (const registry of registers) registry.registerMetric(this as never);
  }

  /** The observer of one label value (kept for the life of the histogram; label values should be bounded). */
  child(labelValue: string): InterTokenObserver {
    let series = this.series.get(labelValue);
    if (!series) {
      series = new Series(this.bounds);
      this.series.set(labelValue, series);
    }
    return series;
  }

  /** Forgets every label value. */
  reset(): void {
    this.series.clear();
  }

  /** The exposition data (prom-client's `MetricObject` shape). */
  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const [labelValue, s] of this.series) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += s.counts[i];
        values.push({
          metricName: bucket,
          labels: { [this.labelName]: labelValue, le: this.bounds[i] },
          value: cumulative,
        });
      }
      values.push({ metricName: bucket, labels: { [this.labelName]: labelValue, le: '+Inf' }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: { [this.labelName]: labelValue }, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: { [this.labelName]: labelValue }, value: s.count });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values });
  }
}
