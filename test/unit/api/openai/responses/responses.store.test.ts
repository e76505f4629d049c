import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResponseObject, ResponsesStore } from '../../../../../src/api/openai/responses';

function stored(id: string) {
  return { response: { id } as ResponseObject, conversation: [{ role: 'user', content: id }] };
}

describe('ResponsesStore', () => {
  it('keeps at most maxResponses, evicting the least recently used (a lookup refreshes)', () => {
    const store = new ResponsesStore({ maxResponses: 2, ttlMs: 60_000 });
    store.save('a', stored('a'));
    store.save('b', stored('b'));
    assert.ok(store.get('a'), 'a is now the most recent');
    store.save('c', stored('c'));
    assert.equal(store.get('b'), undefined, 'b was the least recently used');
    assert.equal(store.get('a')?.response.id, 'a');
    assert.deepEqual(store.get('c')?.conversation, [{ role: 'user', content: 'c' }]);
    assert.equal(store.size, 2);
  });

  it('drops entries once their TTL (from creation) has passed', () => {
    let now = 1_000;
    const store = new ResponsesStore({ maxResponses: 10, ttlMs: 100, now: () => now });
    store.save('a', stored('a'));
    now += 50;
    store.save('b', stored('b'));
    now += 40;
    assert.ok(store.get('a'), 'a: 90 ms old');
    now += 20;
    assert.equal(store.get('a'), undefined, 'a: 110 ms old, a lookup does not extend it');
    assert.ok(store.get('b'));
    now += 50;
    assert.equal(store.size, 0);
  });

  it('delete() removes; maxResponses 0 keeps nothing; defaults are 1,000 and one hour', () => {
    const store = new ResponsesStore();
    store.save('a', stored('a'));
    assert.equal(store.delete('a'), true);
    assert.equal(store.delete('a'), false);
    assert.equal(store.get('a'), undefined);
    const none = new ResponsesStore({ maxResponses: 0 });
    none.save('a', stored('a'));
    assert.equal(none.get('a'), undefined);
    let now = 0;
    const defaults = new ResponsesStore({ now: () => now });
    for (let i = 0; i < 1001; i++) defaults.save(`r${i}`, stored(`r${i}`));
    assert.equal(defaults.size, 1000);
    assert.equal(defaults.get('r0'), undefined);
    now = 3_600_000;
    assert.equal(defaults.size, 0);
  });
});
