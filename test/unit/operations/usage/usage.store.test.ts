import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InMemoryUsageStore, UsageRecord } from '../../../../src/operations';

const MIN = 60_000;
const HOUR = 60 * MIN;
/** A start-up time on a whole hour (buckets align to the epoch). */
const T0 = Date.UTC(2026, 0, 2, 10, 0, 0);

function rec(principal: string, model: string, prompt = 10, completion = 5, refusal?: string): UsageRecord {
  return {
    principal,
    model,
    promptTokens: prompt,
    cachedTokens: Math.floor(prompt / 2),
    completionTokens: completion,
    ...(refusal ? { refusal } : {}),
  };
}

/** A store with a settable clock. */
function store(options: ConstructorParameters<typeof InMemoryUsageStore>[0] = {}) {
  const clock = { now: T0 };
  const s = new InMemoryUsageStore({ ...options, now: () => clock.now });
  return { s, clock };
}

describe('InMemoryUsageStore', () => {
  it('sums records per principal and model, refusals by reason, rows sorted by principal then model', () => {
    const { s, clock } = store();
    clock.now = T0 + 5 * MIN;
    s.record(rec('team-b', 'demo:latest'), T0 + MIN);
    s.record(rec('team-a', 'demo:latest', 100, 20), T0 + MIN + 1);
    s.record(rec('team-a', 'demo:latest', 50, 10), T0 + 3 * MIN);
    s.record(rec('team-a', '', 0, 0, 'requests_per_minute'), T0 + 3 * MIN);
    s.record(rec('team-a', '', 0, 0, 'requests_per_minute'), T0 + 4 * MIN);
    const report = s.query(T0, T0 + 5 * MIN);
    assert.equal(report.startMs, T0);
    assert.equal(report.endMs, T0 + 5 * MIN);
    assert.deepEqual(report.rows, [
      {
        principal: 'team-a',
        model: '',
        requests: 2,
        promptTokens: 0,
        cachedTokens: 0,
        completionTokens: 0,
        refusals: { requests_per_minute: 2 },
      },
      {
        principal: 'team-a',
        model: 'demo:latest',
        requests: 2,
        promptTokens: 150,
        cachedTokens: 75,
        completionTokens: 30,
        refusals: {},
      },
      {
        principal: 'team-b',
        model: 'demo:latest',
        requests: 1,
        promptTokens: 10,
        cachedTokens: 5,
        completionTokens: 5,
        refusals: {},
      },
    ]);
  });

  it('answers a range at one-minute resolution: a bucket overlapping the range counts whole', () => {
    const { s, clock } = store();
    clock.now = T0 + 10 * MIN;
    s.record(rec('a', 'm', 1, 0), T0 + MIN + 30_000); // bucket [1, 2) min
    s.record(rec('a', 'm', 2, 0), T0 + 4 * MIN); // bucket [4, 5)
    s.record(rec('a', 'm', 4, 0), T0 + 9 * MIN + 59_999); // bucket [9, 10)
    const prompt = (start: number, end: number) => s.query(start, end).rows[0]?.promptTokens ?? 0;
    assert.equal(prompt(T0, T0 + 10 * MIN), 7);
    assert.equal(prompt(T0 + 2 * MIN, T0 + 9 * MIN), 2, 'only the bucket at 4 min');
    assert.equal(prompt(T0 + MIN + 45_000, T0 + 2 * MIN), 1, 'the 1-2 min bucket overlaps the range');
    assert.equal(prompt(T0 + 5 * MIN, T0 + 9 * MIN), 0, 'end is exclusive');
    assert.deepEqual(s.query(T0 + 5 * MIN, T0 + 5 * MIN).rows, []);
  });

  it('never reports a start before start-up', () => {
    const { s, clock } = store();
    clock.now = T0 + MIN;
    const report = s.query(0, T0 + MIN);
    assert.equal(report.startMs, T0);
    assert.equal(s.query(0, 1000).startMs, 1000, 'a range that ends before start-up: start = end');
  });

  it('merges minute buckets older than a day into hour buckets, keeping the sums', () => {
    const { s, clock } = store();
    for (let m = 0; m < 120; m++) s.record(rec('a', 'm', 1, 1), T0 + m * MIN);
    assert.equal(s.bucketCount, 120);
    clock.now = T0 + 26 * HOUR;
    s.record(rec('a', 'm', 1, 1), clock.now); // a new bucket compacts
    assert.equal(s.bucketCount, 3, 'two hour buckets and the current minute');
    assert.equal(s.cellCount, 3);
    assert.equal(s.query(T0, T0 + 2 * HOUR).rows[0].promptTokens, 120);
    // At hour resolution now: a range inside the first hour counts that hour whole.
    assert.equal(s.query(T0 + 10 * MIN, T0 + 11 * MIN).rows[0].requests, 60);
    // A late record for old time joins the hour bucket that covers it.
    s.record(rec('a', 'm', 1000, 0), T0 + 30 * MIN);
    assert.equal(s.bucketCount, 3);
    assert.equal(s.query(T0, T0 + HOUR).rows[0].promptTokens, 1060);
  });

  it('drops what is older than the retention and says so in the start of later reports', () => {
    const { s, clock } = store({ retentionMs: 2 * HOUR, fineForMs: HOUR });
    s.record(rec('a', 'm'), T0);
    clock.now = T0 + 3 * HOUR;
    s.record(rec('a', 'm'), clock.now);
    const report = s.query(0, clock.now + MIN);
    assert.equal(report.rows[0].requests, 1);
    assert.equal(report.startMs, T0 + MIN, 'after the dropped bucket');
    s.record(rec('a', 'm'), T0 + 10 * MIN); // older than what is kept: ignored
    assert.equal(s.query(0, clock.now + MIN).rows[0].requests, 1);
  });

  it('keeps at most maxCells cells, dropping the oldest buckets first', () => {
    const { s, clock } = store({ maxCells: 50 });
    for (let m = 0; m < 30; m++) {
      clock.now = T0 + m * MIN;
      for (const p of ['a', 'b', 'c']) s.record(rec(p, 'm', 1, 0), clock.now);
      assert.ok(s.cellCount <= 50, `${s.cellCount} cells`);
    }
    const report = s.query(T0, clock.now + MIN);
    assert.equal(
      report.rows.reduce((n, r) => n + r.requests, 0),
      48,
      'the 16 newest minutes, 3 cells each',
    );
    assert.equal(report.startMs, T0 + 14 * MIN);
  });
});
