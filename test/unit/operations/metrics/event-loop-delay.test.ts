import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import {
  EVENT_LOOP_DELAY_METRIC,
  EVENT_LOOP_DELAY_QUANTILES,
  EventLoopDelayMonitor,
  EventLoopDelaySummary,
} from '../../../../src/operations/metrics/event-loop-delay';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Keeps the event loop busy for `ms` milliseconds. */
function block(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}

describe('event-loop delay (issue 32 item 2)', () => {
  it('a blocked loop shows in the largest delay and the sum, and leaves the window after it', async () => {
    const monitor = new EventLoopDelayMonitor(400);
    try {
      await sleep(50);
      block(400);
      await sleep(30);
      const during = monitor.snapshot();
      assert.ok(during.quantiles.get(1)! >= 0.35, `max ${during.quantiles.get(1)} s after a 400 ms block`);
      assert.ok(during.sumSeconds >= 0.35, `sum ${during.sumSeconds}`);
      assert.ok(during.count > 0);
      for (const q of EVENT_LOOP_DELAY_QUANTILES) assert.ok(during.quantiles.get(q)! <= during.quantiles.get(1)!);
      // Two rotations later (200 ms each) both monitors were reset after the block.
      await sleep(700);
      const later = monitor.snapshot();
      assert.ok(later.quantiles.get(1)! < 0.3, `max ${later.quantiles.get(1)} s once the block left the window`);
      assert.ok(later.windowSeconds >= 0.15 && later.windowSeconds <= 0.5, `window ${later.windowSeconds} s`);
      assert.ok(later.count > during.count, 'the count is cumulative');
      assert.ok(later.sumSeconds >= during.sumSeconds, 'the sum is cumulative');
    } finally {
      monitor.stop();
    }
  });

  it('renders as a Prometheus summary with bounded labels', async () => {
    const monitor = new EventLoopDelayMonitor();
    try {
      const registry = new Registry();
      new EventLoopDelaySummary(monitor, [registry]);
      await sleep(50);
      const text = await registry.metrics();
      assert.match(text, new RegExp(`^# TYPE ${EVENT_LOOP_DELAY_METRIC} summary$`, 'm'));
      for (const q of ['0.5', '0.9', '0.99', '1']) {
        assert.match(text, new RegExp(`^${EVENT_LOOP_DELAY_METRIC}\\{quantile="${q}"\\} [0-9.e-]+$`, 'm'));
      }
      assert.match(text, new RegExp(`^${EVENT_LOOP_DELAY_METRIC}_sum [0-9.e-]+$`, 'm'));
      assert.match(text, new RegExp(`^${EVENT_LOOP_DELAY_METRIC}_count [1-9][0-9]*$`, 'm'));
      assert.equal(text.split('\n').filter((l) => l.startsWith(EVENT_LOOP_DELAY_METRIC)).length, 6);
    } finally {
      monitor.stop();
    }
  });
});
