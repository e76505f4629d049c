import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../src/common/errors';
import { parseUsageTime, usageRange } from '../../../../src/operations/usage/usage-range';

describe('parseUsageTime', () => {
  it('reads RFC 3339 with a zone and unix seconds', () => {
    assert.equal(parseUsageTime('start', '2026-01-02T15:04:05Z'), Date.UTC(2026, 0, 2, 15, 4, 5));
    assert.equal(parseUsageTime('start', '2026-01-02t15:04:05.250z'), Date.UTC(2026, 0, 2, 15, 4, 5, 250));
    assert.equal(parseUsageTime('start', '2026-01-02T16:04:05+01:00'), Date.UTC(2026, 0, 2, 15, 4, 5));
    assert.equal(parseUsageTime('end', '1767366245'), 1767366245000);
    assert.equal(parseUsageTime('end', '1767366245.5'), 1767366245500);
  });

  it('refuses anything else with a 400 that names the parameter', () => {
    for (const bad of [
      'yesterday',
      '2026-01-02',
      '2026-01-02T15:04:05', // no zone
      '2026-02-30T00:00:00Z', // no such day
      '2026-01-02T25:00:00Z',
      '-5',
      '1e9',
      '',
      'x'.repeat(10_000),
    ]) {
      assert.throws(
        () => parseUsageTime('start', bad),
        (err: unknown) =>
          err instanceof InvalidRequestError && /^invalid start/.test(err.message) && err.param === 'start',
        bad.slice(0, 40),
      );
    }
    assert.throws(() => parseUsageTime('end', ['1', '2']), /invalid end: given more than once/);
  });
});

describe('usageRange', () => {
  it('defaults to start-up → now and refuses a start after the end', () => {
    assert.deepEqual(usageRange({}, 1000, 5000), { startMs: 1000, endMs: 5000 });
    assert.deepEqual(usageRange({ start: '2' }, 1000, 5000), { startMs: 2000, endMs: 5000 });
    assert.throws(() => usageRange({ start: '6' }, 1000, 5000), /invalid range: start is after end/);
  });
});
