import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InMemoryResponsesStore, ResponseObject } from '../../../../../src/api/openai/responses';

function stored(id: string, text = id) {
  return { response: { id } as ResponseObject, conversation: [{ role: 'user', content: text }] };
}

const A = 'key:aaaaaaaaaaaa';
const B = 'key:bbbbbbbbbbbb';

describe('InMemoryResponsesStore', () => {
  it('keeps at most maxResponses, evicting the least recently used (a lookup refreshes)', async () => {
    const store = new InMemoryResponsesStore({ maxResponses: 2, ttlMs: 60_000 });
    await store.save(A, 'a', stored('a'));
    await store.save(A, 'b', stored('b'));
    assert.ok(await store.get(A, 'a'), 'a is now the most recent');
    await store.save(A, 'c', stored('c'));
    assert.equal(await store.get(A, 'b'), undefined, 'b was the least recently used');
    assert.equal((await store.get(A, 'a'))?.response.id, 'a');
    assert.deepEqual((await store.get(A, 'c'))?.conversation, [{ role: 'user', content: 'c' }]);
    assert.equal(store.size, 2);
  });

  it('is bounded by bytes: large entries push out the least recently used; one over the bound is not kept', async () => {
    const big = 'x'.repeat(4000);
    const store = new InMemoryResponsesStore({ maxResponses: 100, maxBytes: 10_000, ttlMs: 60_000 });
    await store.save(A, 'a', stored('a', big));
    await store.save(A, 'b', stored('b', big));
    await store.save(A, 'c', stored('c', big));
    assert.equal(await store.get(A, 'a'), undefined, 'a went to make room');
    assert.ok((await store.get(A, 'b')) && (await store.get(A, 'c')));
    assert.ok(store.bytes <= 10_000);
    await store.save(A, 'huge', stored('huge', 'y'.repeat(20_000)));
    assert.equal(await store.get(A, 'huge'), undefined);
  });

  it('drops entries once their TTL (from creation) has passed', async () => {
    let now = 1_000;
    const store = new InMemoryResponsesStore({ maxResponses: 10, ttlMs: 100, now: () => now });
    await store.save(A, 'a', stored('a'));
    now += 50;
    await store.save(A, 'b', stored('b'));
    now += 40;
    assert.ok(await store.get(A, 'a'), 'a: 90 ms old');
    now += 20;
    assert.equal(await store.get(A, 'a'), undefined, 'a: 110 ms old, a lookup does not extend it');
    assert.ok(await store.get(A, 'b'));
    now += 50;
    assert.equal(store.size, 0);
  });

  it("one principal cannot get or delete another's response", async () => {
    const store = new InMemoryResponsesStore();
    await store.save(A, 'r', stored('r'));
    assert.equal(await store.get(B, 'r'), undefined);
    assert.equal(await store.delete(B, 'r'), false);
    assert.ok(await store.get(A, 'r'), 'still there for its owner');
    assert.equal(await store.delete(A, 'r'), true);
    assert.equal(await store.delete(A, 'r'), false);
  });

  it('maxResponses 0 keeps nothing; defaults are 1,000 and one hour', async () => {
    const none = new InMemoryResponsesStore({ maxResponses: 0 });
    await none.save(A, 'a', stored('a'));
    assert.equal(await none.get(A, 'a'), undefined);
    let now = 1; // lru-cache reads a start time of 0 as "no TTL"
    const defaults = new InMemoryResponsesStore({ now: () => now });
    for (let i = 0; i < 1001; i++) await defaults.save(A, `r${i}`, stored(`r${i}`));
    assert.equal(defaults.size, 1000);
    assert.equal(await defaults.get(A, 'r0'), undefined);
    now = 3_600_002;
    assert.equal(defaults.size, 0);
  });
});
