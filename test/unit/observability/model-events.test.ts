import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { firstValueFrom, lastValueFrom, of, take, toArray } from 'rxjs';
import {
  InMemoryModelEvents,
  MODEL_EVENTS_RING_AGE_MS,
  MODEL_EVENTS_RING_SIZE,
  ModelEvent,
  parseEventId,
  publishProgress,
} from '../../../src/observability/model-events';
import { RequestContext, requestContextStorage } from '../../../src/observability/request-context';

/** Collects what a stream delivers synchronously (replay) plus what is published while subscribed. */
function collect(bus: InMemoryModelEvents, lastEventId?: string): { events: ModelEvent[]; completed: () => boolean } {
  const events: ModelEvent[] = [];
  let done = false;
  bus.stream(lastEventId).subscribe({ next: (e) => events.push(e), complete: () => (done = true) });
  return { events, completed: () => done };
}

describe('InMemoryModelEvents', () => {
  it('numbers events <epoch>-<seq> with an increasing seq and delivers them to every stream', () => {
    const bus = new InMemoryModelEvents();
    assert.match(bus.epoch, /^[0-9a-f]{12}$/);
    const a = collect(bus);
    const b = collect(bus);
    const first = bus.publish({ type: 'load.start', model: 'tiny:latest' });
    const second = bus.publish({ type: 'load.progress', model: 'tiny:latest', data: { progress: 0.5 } });
    assert.equal(first.id, `${bus.epoch}-1`);
    assert.equal(second.seq, 2);
    assert.deepEqual(
      a.events.map((e) => e.type),
      ['load.start', 'load.progress'],
    );
    assert.deepEqual(
      b.events.map((e) => e.id),
      [first.id, second.id],
    );
  });

  it('replays only newer events of its own epoch; another epoch or no id replays nothing', () => {
    const bus = new InMemoryModelEvents();
    const ids = [1, 2, 3].map((i) => bus.publish({ type: 'create.step', model: `m${i}:latest` }).id);
    assert.deepEqual(
      collect(bus, ids[0]).events.map((e) => e.model),
      ['m2:latest', 'm3:latest'],
    );
    assert.deepEqual(collect(bus, ids[2]).events, []);
    assert.deepEqual(collect(bus, 'ffffffffffff-0').events, []);
    assert.deepEqual(collect(bus, 'not an id').events, []);
    assert.deepEqual(collect(bus).events, []);
  });

  it(`keeps at most ${MODEL_EVENTS_RING_SIZE} events, none older than ${MODEL_EVENTS_RING_AGE_MS} ms`, () => {
    let now = 1_000_000;
    const bus = new InMemoryModelEvents(() => now);
    for (let i = 0; i < MODEL_EVENTS_RING_SIZE + 10; i++) bus.publish({ type: 'unload', model: 'x:latest' });
    const all = collect(bus, `${bus.epoch}-0`).events;
    assert.equal(all.length, MODEL_EVENTS_RING_SIZE);
    assert.equal(all[0].seq, 11);
    now += MODEL_EVENTS_RING_AGE_MS - 1;
    bus.publish({ type: 'unload', model: 'y:latest' });
    now += 2; // the first batch is now older than the ring's age; the last event is not
    const fresh = collect(bus, `${bus.epoch}-0`).events;
    assert.deepEqual(
      fresh.map((e) => e.model),
      ['y:latest'],
    );
  });

  it('end() completes every stream, and later streams complete at once', async () => {
    const bus = new InMemoryModelEvents();
    const open = collect(bus);
    bus.end();
    assert.equal(open.completed(), true);
    assert.deepEqual(await lastValueFrom(bus.stream().pipe(toArray())), []);
    bus.end(); // idempotent
  });

  it('parses ids', () => {
    assert.deepEqual(parseEventId('abc-12'), { epoch: 'abc', seq: 12 });
    assert.equal(parseEventId('abc-x'), undefined);
    assert.equal(parseEventId('-1'), undefined);
    assert.equal(parseEventId(undefined), undefined);
  });
});

describe('publishProgress', () => {
  it('publishes each record with the subscribing request principal and passes records through', async () => {
    const bus = new InMemoryModelEvents();
    const seen = collect(bus);
    const source$ = publishProgress(bus, 'pull.progress', 'tiny:latest', of({ status: 'a' }, { status: 'b' }), (r) => ({
      status: r.status,
    }));
    const context = new RequestContext('r1', 'POST', '/api/pull');
    context.principal = 'key:0123456789ab';
    const records = await requestContextStorage.run(context, () => lastValueFrom(source$.pipe(toArray())));
    assert.deepEqual(records, [{ status: 'a' }, { status: 'b' }]);
    assert.deepEqual(
      seen.events.map((e) => [e.type, e.model, e.principal, e.data]),
      [
        ['pull.progress', 'tiny:latest', 'key:0123456789ab', { status: 'a' }],
        ['pull.progress', 'tiny:latest', 'key:0123456789ab', { status: 'b' }],
      ],
    );
  });

  it('outside a request the events carry no principal; without a bus the source is returned as is', async () => {
    const bus = new InMemoryModelEvents();
    const seen = collect(bus);
    await firstValueFrom(publishProgress(bus, 'create.step', 'x:latest', of(1), () => ({})).pipe(take(1)));
    assert.equal(seen.events[0].principal, undefined);
    const source$ = of(1);
    assert.equal(
      publishProgress(undefined, 'create.step', 'x', source$, () => ({})),
      source$,
    );
  });
});
