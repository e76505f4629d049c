import { IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';
import { Registry, Summary } from 'prom-client';

/** Sampling interval of the event-loop delay monitors, ms (prom-client's default collector uses the same). */
export const EVENT_LOOP_SAMPLE_MS = 10;

/** The quantiles `llamad_event_loop_delay_seconds` reports; 1 is the largest delay of the window. */
export const EVENT_LOOP_DELAY_QUANTILES: readonly number[] = [0.5, 0.9, 0.99, 1];

/** Default length of the window the quantiles cover, ms: between half of it and all of it, as in prom-client. */
export const EVENT_LOOP_WINDOW_MS = 60_000;

/** One reading of an {@link EventLoopDelayMonitor}. Delays in seconds. */
export interface EventLoopDelaySnapshot {
  /** Delay at each of {@link EVENT_LOOP_DELAY_QUANTILES}, over the last half-window to window; 0 without samples. */
  quantiles: Map<number, number>;
  /** Samples since the monitor started. */
  count: number;
  /** Sum of the delays of those samples, seconds. */
  sumSeconds: number;
  /** How far back the quantiles reach, seconds. */
  windowSeconds: number;
}

/**
 * The daemon's event-loop delay, from `perf_hooks.monitorEventLoopDelay` (issue 32): how late a timer due every
 * {@link EVENT_LOOP_SAMPLE_MS} ms actually runs. Node records the whole interval between two samples, so the sampling
 * interval itself is taken off (an idle loop reads ≈ 0, a 300 ms block reads ≈ 0.3 s).
 *
 * Quantiles over a sliding window without merging histograms (node cannot add an interval histogram to another): two
 * monitors run side by side, each reset once per window, half a window apart; a reading uses the older one, which
 * covers between half a window and a whole one. The count and sum are cumulative (a Prometheus summary's `_count`
 * and `_sum`), kept from the first monitor at each of its resets. Cost: two libuv timers every 10 ms, one rotation
 * timer (all unref'd); nothing per request.
 */
export class EventLoopDelayMonitor {
  private readonly monitors: [IntervalHistogram, IntervalHistogram];
  private readonly resetAt: [number, number];
  private readonly rotation: NodeJS.Timeout;
  private closedCount = 0;
  private closedSumNs = 0;

  /**
   * Starts sampling at once.
   * @param windowMs length of the quantile window, ms (default {@link EVENT_LOOP_WINDOW_MS})
   */
  constructor(windowMs = EVENT_LOOP_WINDOW_MS) {
    this.monitors = [
      monitorEventLoopDelay({ resolution: EVENT_LOOP_SAMPLE_MS }),
      monitorEventLoopDelay({ resolution: EVENT_LOOP_SAMPLE_MS }),
    ];
    for (const monitor of this.monitors) monitor.enable();
    const now = performance.now();
    this.resetAt = [now, now];
    this.rotation = setInterval(() => this.rotate(), Math.max(1, Math.floor(windowMs / 2)));
    this.rotation.unref();
  }

  /** The current reading (see {@link EventLoopDelaySnapshot}). */
  snapshot(): EventLoopDelaySnapshot {
    const now = performance.now();
    const older = this.resetAt[0] <= this.resetAt[1] ? 0 : 1;
    const histogram = this.monitors[older];
    const quantiles = new Map<number, number>();
    for (const q of EVENT_LOOP_DELAY_QUANTILES) {
      quantiles.set(q, histogram.count === 0 ? 0 : delaySeconds(histogram.percentile(q * 100)));
    }
    const first = this.monitors[0];
    const count = this.closedCount + first.count;
    return {
      quantiles,
      count,
      sumSeconds: (this.closedSumNs + sumOfDelaysNs(first)) / 1e9,
      windowSeconds: (now - this.resetAt[older]) / 1000,
    };
  }

  /** Stops sampling (idempotent). */
  stop(): void {
    clearInterval(this.rotation);
    for (const monitor of this.monitors) monitor.disable();
  }

  /** Resets the monitor whose window is full (the other keeps the recent past). */
  private rotate(): void {
    // Every half window. At start both began together: the second is reset first, so the two stay half a window
    // apart and the older one is always the one whose window is full.
    const index = this.resetAt[0] === this.resetAt[1] ? 1 : this.resetAt[0] < this.resetAt[1] ? 0 : 1;
    if (index === 0) {
      this.closedCount += this.monitors[0].count;
      this.closedSumNs += sumOfDelaysNs(this.monitors[0]);
    }
    this.monitors[index].reset();
    this.resetAt[index] = performance.now();
  }
}

/** An interval recorded by node (ns) → the delay beyond the sampling interval, seconds (never below 0). */
function delaySeconds(intervalNs: number): number {
  return Math.max(0, intervalNs / 1e6 - EVENT_LOOP_SAMPLE_MS) / 1000;
}

/** Sum of the delays (beyond the sampling interval) of a histogram's samples, ns. */
function sumOfDelaysNs(histogram: IntervalHistogram): number {
  if (histogram.count === 0) return 0;
  return Math.max(0, histogram.mean - EVENT_LOOP_SAMPLE_MS * 1e6) * histogram.count;
}

/** Name of the event-loop delay summary. */
export const EVENT_LOOP_DELAY_METRIC = 'llamad_event_loop_delay_seconds';

/**
 * `llamad_event_loop_delay_seconds`, a Prometheus summary (docs/observability.md): `quantile` ∈
 * {@link EVENT_LOOP_DELAY_QUANTILES} over the monitor's sliding window, plus cumulative `_sum` and `_count`. Read
 * from an {@link EventLoopDelayMonitor} when scraped (its `get()` replaces prom-client's own quantile estimator);
 * nothing is observed through prom-client.
 */
export class EventLoopDelaySummary extends Summary {
  /**
   * @param monitor the monitor read at each scrape
   * @param registers registries to add the metric to
   */
  constructor(
    private readonly monitor: EventLoopDelayMonitor,
    registers: Registry[],
  ) {
    super({
      name: EVENT_LOOP_DELAY_METRIC,
      help:
        'How late the event loop runs a timer due every 10 ms, seconds: quantiles over the last 30-60 s ' +
        '(quantile 1 is the largest), sum and count since start.',
      percentiles: [...EVENT_LOOP_DELAY_QUANTILES],
      registers,
    });
  }

  /** The summary's values from the monitor's snapshot, in prom-client's exposition shape. */
  override get(): ReturnType<Summary['get']> {
    const snapshot = this.monitor.snapshot();
    const name = EVENT_LOOP_DELAY_METRIC;
    const values = [
      ...EVENT_LOOP_DELAY_QUANTILES.map((q) => ({
        labels: { quantile: q },
        value: snapshot.quantiles.get(q) ?? 0,
        metricName: name,
      })),
      { labels: {}, value: snapshot.sumSeconds, metricName: `${name}_sum` },
      { labels: {}, value: snapshot.count, metricName: `${name}_count` },
    ];
    const metric = { name, help: (this as unknown as { help: string }).help, type: 'summary', values };
    return Promise.resolve(metric as unknown as Awaited<ReturnType<Summary['get']>>);
  }
}
