import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeRate, ttft, type StreamTiming } from '../../../bench/clients';
import { words } from '../../../bench/prompts';
import { fmt, gaps, median, pairedRatio, percentile, ratio } from '../../../bench/stats';

describe('bench statistics', () => {
  it('median and percentiles interpolate between closest ranks', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.equal(percentile([1, 2, 3, 4, 5], 0), 1);
    assert.equal(percentile([1, 2, 3, 4, 5], 100), 5);
    assert.equal(percentile([10, 20], 99), 19.9);
    assert.ok(Number.isNaN(median([])));
    assert.equal(median([NaN, 5]), 5);
    assert.throws(() => percentile([1], 101), RangeError);
  });

  it('gaps, ratios and formatting', () => {
    assert.deepEqual(gaps([1, 4, 10]), [3, 6]);
    assert.deepEqual(gaps([7]), []);
    assert.equal(ratio(97, 100), '0.97×');
    assert.equal(ratio(1, 0), 'n/a');
    assert.equal(ratio(NaN, 1), 'n/a');
    assert.equal(fmt(1.26, 1), '1.3');
    assert.equal(fmt(Infinity), 'n/a');
  });

  it('client timings: TTFT from send, decode rate over the tokens after the first', () => {
    const t: StreamTiming = {
      sentAt: 100,
      tokenTimes: [150, 160, 170, 180, 190],
      endAt: 191,
      evalCount: 5,
      promptCount: 10,
      promptMs: 40,
      evalMs: 50,
    };
    assert.equal(ttft(t), 50);
    assert.equal(decodeRate(t), 100); // 4 tokens in 40 ms
    assert.ok(Number.isNaN(decodeRate({ ...t, tokenTimes: [150] })));
  });

  it('paired ratio: the median of the per-round ratios, rounds without both figures left out', () => {
    // Drift: both sides 20 % faster in the second round; every round's ratio is 0.9.
    assert.equal(pairedRatio([9, 10.8, 9], [10, 12, 10]), 0.9);
    // One round in which only the peer ran fast moves one ratio, not the median.
    assert.equal(pairedRatio([10, 10, 10], [10, 20, 10]), 1);
    assert.equal(pairedRatio([10, NaN, 5, 7], [10, 3, 0]), 1);
    assert.ok(Number.isNaN(pairedRatio([], [1])));
  });

  it('prompt words are deterministic per seed', () => {
    assert.equal(words(1, 30), words(1, 30));
    assert.notEqual(words(1, 30), words(2, 30));
    assert.equal(words(3, 24).split(' ').length, 24);
  });
});
