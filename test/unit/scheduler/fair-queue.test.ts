import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Observable, Subject } from 'rxjs';
import { FairGate, fairTicket, FairTicket, slotGatePermits } from '../../../src/scheduler/fair-queue';

/** A gate whose grants are recorded by label, each holding its release until the test ends it. */
function harness(permits: number) {
  const gate = new FairGate(permits);
  const order: string[] = [];
  const releases = new Map<string, () => void>();
  const cancels = new Map<string, () => void>();
  const enter = (label: string, ticket: FairTicket) => {
    cancels.set(
      label,
      gate.enter(ticket, (release) => {
        order.push(label);
        releases.set(label, release);
      }),
    );
  };
  /** Ends the generation of `label` (its permit goes to the next waiter at once). */
  const end = (label: string) => {
    const release = releases.get(label);
    assert.ok(release, `${label} holds no permit`);
    release();
  };
  /** Ends the oldest running generations one by one until nobody waits. */
  const runAll = () => {
    let i = 0;
    while (gate.waiting > 0 || gate.running > 0) end(order[i++]);
  };
  return { gate, order, enter, end, runAll, cancels };
}

const A = fairTicket('a', undefined);
const B = fairTicket('b', undefined);

describe('FairGate', () => {
  it('lets at most `permits` in and hands a freed permit to the next waiter in the same call', () => {
    const h = harness(2);
    h.enter('a1', A);
    h.enter('a2', A);
    h.enter('a3', A);
    assert.deepEqual(h.order, ['a1', 'a2']);
    assert.equal(h.gate.running, 2);
    assert.equal(h.gate.waiting, 1);
    h.end('a1');
    assert.deepEqual(h.order, ['a1', 'a2', 'a3'], 'granted synchronously on release');
    assert.equal(h.gate.running, 2);
    assert.equal(h.gate.waiting, 0);
    h.end('a1'); // a second release is a no-op
    assert.equal(h.gate.running, 2);
  });

  it('is plain FIFO without principals or weights (every caller anonymous)', () => {
    const h = harness(1);
    const anonymous = fairTicket(undefined, undefined);
    for (let i = 0; i < 6; i++) h.enter(`r${i}`, anonymous);
    h.runAll();
    assert.deepEqual(h.order, ['r0', 'r1', 'r2', 'r3', 'r4', 'r5']);
  });

  it('keeps arrival order within a principal and interleaves two principals of weight 1 one for one', () => {
    const h = harness(1);
    h.enter('a0', A); // runs at once
    for (let i = 1; i <= 4; i++) h.enter(`a${i}`, A);
    for (let i = 1; i <= 3; i++) h.enter(`b${i}`, B);
    h.runAll();
    assert.deepEqual(h.order, ['a0', 'b1', 'a1', 'b2', 'a2', 'b3', 'a3', 'a4']);
  });

  it('serves a late principal at the next free slot even behind a long queue (32 from A, then 1 from B)', () => {
    const h = harness(4);
    for (let i = 0; i < 32; i++) h.enter(`a${i}`, A);
    h.enter('b', B);
    assert.equal(h.gate.waiting, 29);
    h.end('a0');
    assert.equal(h.order.at(-1), 'b', 'B takes the first permit freed after it arrived');
    h.runAll();
    assert.equal(h.order.length, 33);
    assert.deepEqual(
      h.order.filter((l) => l.startsWith('a')),
      Array.from({ length: 32 }, (_, i) => `a${i}`),
    );
  });

  it('gives a weight-2 principal two permits for each one of a weight-1 principal while both wait', () => {
    const h = harness(1);
    const heavy = fairTicket('heavy', 2);
    h.enter('x', fairTicket('other', 1)); // holds the only permit while both queues fill
    for (let i = 0; i < 8; i++) h.enter(`h${i}`, heavy);
    for (let i = 0; i < 4; i++) h.enter(`l${i}`, B);
    h.runAll();
    const served = h.order.slice(1, 10).map((l) => l[0]);
    // In every window of three grants while both wait, two go to the heavy principal.
    for (let i = 0; i + 3 <= 9; i += 3) {
      assert.equal(served.slice(i, i + 3).filter((c) => c === 'h').length, 2, h.order.join(' '));
    }
    assert.deepEqual(
      h.order.filter((l) => l.startsWith('h')),
      Array.from({ length: 8 }, (_, i) => `h${i}`),
    );
  });

  it('sizes a runner gate as its slots: no generation waits inside the runner', () => {
    assert.equal(slotGatePermits(1), 1);
    assert.equal(slotGatePermits(4), 4);
    assert.equal(slotGatePermits(0), 1);
  });

  it('a non-positive or non-finite weight counts as 1', () => {
    assert.equal(fairTicket('p', 0).weight, 1);
    assert.equal(fairTicket('p', -3).weight, 1);
    assert.equal(fairTicket('p', Number.NaN).weight, 1);
    assert.equal(fairTicket('p', 0.5).weight, 0.5);
  });

  it('a cancelled waiter leaves the queue at once and is never granted', () => {
    const h = harness(1);
    h.enter('a0', A);
    h.enter('a1', A);
    h.enter('b1', B);
    assert.equal(h.gate.waiting, 2);
    h.cancels.get('b1')?.();
    assert.equal(h.gate.waiting, 1);
    h.cancels.get('b1')?.(); // twice: no-op
    assert.equal(h.gate.waiting, 1);
    h.runAll();
    assert.deepEqual(h.order, ['a0', 'a1']);
    assert.equal(h.gate.running, 0);
  });

  it('starves no one: a principal that keeps arriving cannot hold back an earlier waiter of another', () => {
    const h = harness(1);
    h.enter('a0', A);
    h.enter('b', B);
    // A keeps queueing new requests, one per grant, for a long time.
    let n = 1;
    for (let step = 0; step < 50 && !h.order.includes('b'); step++) {
      h.enter(`a${n++}`, A);
      h.end(h.order.at(-1) as string);
    }
    const at = h.order.indexOf('b');
    assert.ok(at >= 0 && at <= 2, `B was granted at position ${at}: ${h.order.join(' ')}`);
  });

  it('an idle principal saves no credit: after its absence it is interleaved, not served in a burst', () => {
    const h = harness(1);
    h.enter('b0', B); // B was served long ago
    h.end('b0');
    for (let i = 0; i < 10; i++) {
      h.enter(`a${i}`, A);
      h.end(`a${i}`);
    }
    h.enter('a10', A); // runs
    for (let i = 11; i < 14; i++) h.enter(`a${i}`, A);
    for (let i = 1; i < 4; i++) h.enter(`b${i}`, B);
    h.runAll();
    assert.deepEqual(h.order.slice(11), ['a10', 'b1', 'a11', 'b2', 'a12', 'b3', 'a13']);
  });

  describe('admit (Observable)', () => {
    it('subscribes the source under a permit and gives it back on complete, error and unsubscribe', () => {
      const gate = new FairGate(1);
      const first = new Subject<number>();
      const second = new Subject<number>();
      const third = new Subject<number>();
      const seen: string[] = [];
      let started = 0;
      const run = (s: Subject<number>, label: string) =>
        gate
          .admit(A, () => {
            started++;
            return s;
          })
          .subscribe({
            next: (v) => seen.push(`${label}:${v}`),
            error: () => seen.push(`${label}:error`),
            complete: () => seen.push(`${label}:complete`),
          });
      run(first, 'first');
      run(second, 'second');
      const sub3 = run(third, 'third');
      assert.equal(started, 1);
      first.next(1);
      first.complete();
      assert.equal(started, 2, 'the second started in the same call as the first completed');
      second.error(new Error('boom'));
      assert.equal(started, 3);
      sub3.unsubscribe();
      assert.equal(gate.running, 0);
      assert.equal(third.observed, false, 'the source was unsubscribed');
      assert.deepEqual(seen, ['first:1', 'first:complete', 'second:error']);
    });

    it('an unsubscribe while waiting never starts the source', () => {
      const gate = new FairGate(1);
      const hold = gate.admit(A, () => new Subject<number>()).subscribe();
      let started = false;
      const waiting = gate
        .admit(B, () => {
          started = true;
          return new Subject<number>();
        })
        .subscribe();
      assert.equal(gate.waiting, 1);
      waiting.unsubscribe();
      assert.equal(gate.waiting, 0);
      hold.unsubscribe();
      assert.equal(started, false);
      assert.equal(gate.running, 0);
    });

    it('sources that fail at once (a dead runner) hand permits on without recursion and leave nothing held', () => {
      const gate = new FairGate(1);
      const hold = new Subject<number>();
      const errors: unknown[] = [];
      gate.admit(A, () => hold).subscribe();
      const failing = () => new Observable<number>((s) => s.error(new Error('runner terminated')));
      for (let i = 0; i < 5000; i++) gate.admit(A, failing).subscribe({ error: (e: unknown) => errors.push(e) });
      assert.equal(gate.waiting, 5000);
      hold.complete();
      assert.equal(errors.length, 5000);
      assert.equal(gate.running, 0);
      assert.equal(gate.waiting, 0);
    });
  });
});
