import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { figuresOf, gainRows, takeTurns, type Player, type Sample } from '../../../bench/speculative-common';

/** A player that logs its warm-up and requests into `log` and answers `samples` in turn. */
function player(name: string, log: string[], samples: Sample[]): Player {
  let next = 0;
  return {
    warm: () => {
      log.push(`${name}:warm`);
      return Promise.resolve();
    },
    run: () => {
      log.push(name);
      return Promise.resolve(samples[next++ % samples.length]);
    },
  };
}

const sample = (rate: number, drafted = 0, accepted = 0): Sample => ({ rate, drafted, accepted, tokens: 128 });

describe('bench speculative: players taking turns', () => {
  it('warms every player first, then rounds in an order rotated by one each round', async () => {
    const log: string[] = [];
    const players = ['a', 'b', 'c'].map((n) => player(n, log, [sample(1)]));
    await takeTurns(players, 4);
    assert.deepEqual(log, ['a:warm', 'b:warm', 'c:warm', 'a', 'b', 'c', 'b', 'c', 'a', 'c', 'a', 'b', 'a', 'b', 'c']);
  });

  it("returns each player's median rate and its acceptance over all its requests, in the players' order", async () => {
    const log: string[] = [];
    const [plain, draft] = await takeTurns(
      [
        player('plain', log, [sample(30), sample(10), sample(20)]),
        player('draft', log, [sample(50, 8, 6), sample(40, 4, 0), sample(45, 0, 0)]),
      ],
      3,
    );
    assert.equal(plain.rate, 20);
    assert.ok(Number.isNaN(plain.acceptance), 'nothing drafted: n/a');
    assert.equal(draft.rate, 45);
    assert.equal(draft.acceptance, 50);
    assert.equal(draft.tokens, 128);
    assert.deepEqual(plain.rates, [30, 10, 20], 'round by round');
  });

  it("÷ no speculation is the median of the rounds' ratios", () => {
    const figures = (rates: number[]) => figuresOf(rates.map((r) => sample(r)));
    const rows: { metric: string; ours: number; theirs: number[] }[] = [];
    const row = (metric: string, ours: number, theirs: number[]) => void rows.push({ metric, ours, theirs });
    // The host slowed down in round 2 for both variants of each side: each round's ratio is 0.9 (ours) and 1.5.
    gainRows(
      { row },
      '',
      { spec: figures([27, 18, 27]), plain: figures([30, 20, 30]) },
      { spec: [figures([30, 15, 30])], plain: [figures([20, 10, 20])] },
    );
    assert.equal(rows[0].metric, '÷ no speculation');
    assert.equal(rows[0].ours, 0.9);
    assert.deepEqual(rows[0].theirs, [1.5]);
  });

  it('runs at least one round', async () => {
    const log: string[] = [];
    await takeTurns([player('a', log, [sample(1)])], 0);
    assert.deepEqual(log, ['a:warm', 'a']);
    assert.ok(Number.isNaN(figuresOf([]).rate));
  });
});
