import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lastValueFrom, Observable, Subject, toArray } from 'rxjs';
import { RateLimitedError } from '../../../src/common/errors';
import { reservedTokens, withTokenReservation } from '../../../src/generation/token-reservation';
import type { TokenMeter } from '../../../src/security/limits';

/** A meter that records reservations and settlements; refuses when `refuse` is set. */
function recordingMeter(refuse = false) {
  const log: string[] = [];
  const meter: TokenMeter = {
    reserve: (tokens) => {
      log.push(`reserve ${tokens}`);
      if (refuse) return Promise.reject(new RateLimitedError('no', 1000));
      return Promise.resolve({ state: {}, settle: (used: number) => void log.push(`settle ${used}`) });
    },
    charge: (tokens) => void log.push(`charge ${tokens}`),
  };
  return { meter, log };
}

describe('token reservation of a generation', () => {
  it('reserves prompt + num_predict, or the rest of the context when unbounded', () => {
    assert.equal(reservedTokens(10, 100, 512), 110);
    assert.equal(reservedTokens(10, -1, 512), 512);
    assert.equal(reservedTokens(600, -1, 512), 600);
    assert.equal(reservedTokens(10, 0, 512), 10);
  });

  it('subscribes the generation only after the reservation, and settles with the real usage at the end', async () => {
    const { meter, log } = recordingMeter();
    let used = 0;
    const source = new Observable<number>((s) => {
      log.push('generate');
      used = 7;
      s.next(1);
      s.complete();
    });
    const values = await lastValueFrom(
      source.pipe(
        withTokenReservation(meter, 50, () => used),
        toArray(),
      ),
    );
    assert.deepEqual(values, [1]);
    assert.deepEqual(log, ['reserve 50', 'generate', 'settle 7']);
  });

  it('a refused reservation fails before the generation is subscribed', async () => {
    const { meter, log } = recordingMeter(true);
    const source = new Observable<number>(() => void log.push('generate'));
    await assert.rejects(lastValueFrom(source.pipe(withTokenReservation(meter, 50, () => 0))), RateLimitedError);
    assert.deepEqual(log, ['reserve 50']);
  });

  it('an unsubscribe (client gone) settles what was used; one before the reservation resolves settles 0', async () => {
    const { meter, log } = recordingMeter();
    const tokens = new Subject<number>();
    let used = 0;
    const sub = tokens.pipe(withTokenReservation(meter, 20, () => used)).subscribe();
    await new Promise((r) => setImmediate(r));
    used = 3;
    sub.unsubscribe();
    assert.deepEqual(log, ['reserve 20', 'settle 3']);
    log.length = 0;
    const early = tokens.pipe(withTokenReservation(meter, 20, () => 99)).subscribe();
    early.unsubscribe();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(log, ['reserve 20', 'settle 0']);
  });

  it('without a meter the source runs as is', async () => {
    const source = new Observable<number>((s) => {
      s.next(2);
      s.complete();
    });
    assert.deepEqual(
      await lastValueFrom(
        source.pipe(
          withTokenReservation(undefined, 5, () => 0),
          toArray(),
        ),
      ),
      [2],
    );
  });
});
