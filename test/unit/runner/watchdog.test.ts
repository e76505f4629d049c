import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import {
  embedBatches,
  heartbeatIntervalMs,
  loadTimeoutMessage,
  ProgressWatchdog,
  RunnerWork,
  StallTimer,
  stallReason,
} from '../../../src/runner/process/watchdog';

describe('runner watchdogs (timers)', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 0 }));
  afterEach(() => mock.timers.reset());

  it('the load stall timer fires after the timeout without progress; progress re-arms it', () => {
    let fired = 0;
    const timer = new StallTimer(1000, () => fired++);
    mock.timers.tick(900);
    timer.progress(0.1);
    mock.timers.tick(900);
    timer.progress(0.1); // the same value is no progress (Ollama compares loadProgress)
    assert.equal(fired, 0);
    mock.timers.tick(200);
    assert.equal(fired, 1);
    assert.equal(timer.value, 0.1);
    const never = new StallTimer(Infinity, () => fired++);
    mock.timers.tick(10 ** 9);
    never.stop();
    assert.equal(fired, 1);
  });

  it('Ollama’s timeout text: progress with two decimals, then the last error line or nothing', () => {
    assert.equal(loadTimeoutMessage(0, undefined), 'timed out waiting for llama runner to start - progress 0.00 - ');
    assert.equal(
      loadTimeoutMessage(0.4267, 'error: out of disk'),
      'timed out waiting for llama runner to start - progress 0.43 - error: out of disk',
    );
  });

  it('kills only when engine work is pending and neither progress nor a new counter came for the timeout', () => {
    let work: RunnerWork = { engineJobs: 0, steps: 0 };
    const stalls: number[] = [];
    const dog = new ProgressWatchdog({
      timeoutMs: 1000,
      numBatch: 512,
      work: () => work,
      onStall: (ms) => stalls.push(ms),
    });
    mock.timers.tick(5000);
    assert.deepEqual(stalls, [], 'idle time never counts');
    work = { engineJobs: 1, steps: 1 };
    for (let i = 0; i < 10; i++) {
      dog.heartbeat(i); // the decode-step counter moves: a long prompt, a long generation
      mock.timers.tick(750);
    }
    for (let i = 0; i < 10; i++) {
      dog.progress(); // events arrive
      mock.timers.tick(750);
    }
    assert.deepEqual(stalls, []);
    dog.heartbeat(9); // heartbeats go on (the child's event loop is alive) but the counter is frozen
    mock.timers.tick(750);
    dog.heartbeat(9);
    mock.timers.tick(750);
    assert.equal(stalls.length, 1);
    assert.ok(stalls[0] > 1000 && stalls[0] <= 1500, `${stalls[0]}`);
    mock.timers.tick(5000);
    assert.equal(stalls.length, 1, 'fires once');
  });

  it('gives a bigger batch and a multi-batch embed job proportionally more time', () => {
    const stalls: number[] = [];
    const work: RunnerWork = { engineJobs: 1, steps: 3 };
    const dog = new ProgressWatchdog({
      timeoutMs: 1000,
      numBatch: 1024,
      work: () => work,
      onStall: (ms) => stalls.push(ms),
    });
    mock.timers.tick(5750);
    assert.deepEqual(stalls, [], '2 × 3 × 1 s allowed');
    mock.timers.tick(500);
    assert.equal(stalls.length, 1);
    dog.stop();
    assert.equal(embedBatches([[1, 2, 3]], 512), 1);
    assert.equal(embedBatches([Array(600).fill(1), Array(600).fill(1)], 512), 3);
    assert.equal(
      embedBatches(
        Array.from({ length: 130 }, () => [1]),
        512,
      ),
      3,
      '64 sequences per batch',
    );
  });

  it('fires for another call pending longer than the timeout, even without engine work', () => {
    const stalls: number[] = [];
    const work: RunnerWork = { engineJobs: 0, steps: 0, oldestCallAt: 0 };
    new ProgressWatchdog({ timeoutMs: 1000, numBatch: 512, work: () => work, onStall: (ms) => stalls.push(ms) });
    mock.timers.tick(1250);
    assert.equal(stalls.length, 1);
  });

  it('is off with an infinite timeout; checks every quarter of the timeout, 50 ms to 1 s', () => {
    assert.equal(heartbeatIntervalMs(Infinity), 0);
    assert.equal(heartbeatIntervalMs(100), 50);
    assert.equal(heartbeatIntervalMs(2000), 500);
    assert.equal(heartbeatIntervalMs(300_000), 1000);
    const stalls: number[] = [];
    new ProgressWatchdog({
      timeoutMs: Infinity,
      numBatch: 512,
      work: () => ({ engineJobs: 3, steps: 1 }),
      onStall: (ms) => stalls.push(ms),
    });
    mock.timers.tick(10 ** 8);
    assert.deepEqual(stalls, []);
  });

  it('says the runner stopped responding', () => {
    assert.equal(
      stallReason(2049, 1),
      'the runner stopped responding (no progress for 2 s with 1 request in flight) and was killed',
    );
    assert.match(stallReason(300_000, 2), /no progress for 300 s with 2 requests in flight/);
  });
});
