import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InMemoryResponsesStore, ResponseObject } from '../../../../../src/api/openai/responses';

function stored(id: string, text = id) {
  return { response: { id } as ResponseObject, conversation: [{ role: 'user', content: text }] };
}

const A = 'key:aaaaaaaaaaaa';
const B = 'key:bbbbbbbbbbbb';

describe('InMemoryResponsesStore', () => {
  it('keeps at most maxResponses, evicting the least recently used (a lookup refreshes)', () => {
    const store = new InMemoryResponsesStore({ maxResponses: 2, ttlMs: 60_000 });
    store.save(A, 'a', stored('a'));
    store.save(A, 'b', stored('b'));
    assert.ok(store.get(A, 'a'), 'a is now the most recent');
    store.save(A, 'c', stored('c'));
    assert.equal(store.get(A, 'b'), undefined, 'b was the least recently used');
    assert.equal(store.get(A, 'a')?.response.id, 'a');
    assert.deepEqual(store.get(A, 'c')?.conversation, [{ role: 'user', content: 'c' }]);
    assert.equal(store.size, 2);
  });

  it('is bounded by bytes: large entries push out the least recently used; one over the bound is not kept', () => {
    const big = 'x'.repeat(4000);
    const store = new InMemoryResponsesStore({ maxResponses: 100, maxBytes: 10_000, ttlMs: 60_000 });
    store.save(A, 'a', stored('a', big));
    store.save(A, 'b', stored('b', big));
    store.save(A, 'c', stored('c', big));
    assert.equal(store.get(A, 'a'), undefined, 'a went to make room');
    assert.ok(store.get(A, 'b') && store.get(A, 'c'));
    assert.ok(store.bytes <= 10_000);
    store.save(A, 'huge', stored('huge', 'y'.repeat(20_000)));
    assert.equal(store.get(A, 'huge'), undefined);
  });

  it('drops entries once their TTL (from creation) has passed', () => {
    let now = 1_000;
    const store = new InMemoryResponsesStore({ maxResponses: 10, ttlMs: 100, now: () => now });
    store.save(A, 'a', stored('a'));
    now += 50;
    store.save(A, 'b', stored('b'));
    now += 40;
    assert.ok(store.get(A, 'a'), 'a: 90 ms old');
    now += 20;
    assert.equal(store.get(A, 'a'), undefined, 'a: 110 ms old, a lookup does not extend it');
    assert.ok(store.get(A, 'b'));
    now += 50;
    assert.equal(store.size, 0);
  });

  it("one principal cannot get or delete another's response", () => {
    const store = new InMemoryResponsesStore();
    store.save(A, 'r', stored('r'));
    assert.equal(store.get(B, 'r'), undefined);
    assert.equal(store.delete(B, 'r'), false);
    assert.ok(store.get(A, 'r'), 'still there for its owner');
    assert.equal(store.delete(A, 'r'), true);
    assert.equal(store.delete(A, 'r'), false);
  });

  it('maxResponses 0 keeps nothing; defaults are 1,000 and one hour', () => {
    const none = new InMemoryResponsesStore({ maxResponses: 0 });
    none.save(A, 'a', stored('a'));
    assert.equal(none.get(A, 'a'), undefined);
    let now = 1; // lru-cache reads a start time of 0 as "no TTL"
    const defaults = new InMemoryResponsesStore({ now: () => now });
    for (let i = 0; i < 1001; i++) defaults.save(A, `r${i}`, stored(`r${i}`));
    assert.equal(defaults.size, 1000);
    assert.equal(defaults.get(A, 'r0'), undefined);
    now = 3_600_002;
    assert.equal(defaults.size, 0);
  });
});
