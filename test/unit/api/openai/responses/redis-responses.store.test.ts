// RedisResponsesStore against a real redis-server (test/utils/redis-server.ts; CI installs it through .ci/run): the
// in-memory store's semantics — owner scoping, TTL from creation, delete, the count and byte bounds — and two stores
// (two replicas) on one server seeing each other's entries.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { RedisResponsesStore, ResponseObject } from '../../../../../src/api/openai/responses';
import { createRedisClient } from '../../../../../src/security/limits';
import { RedisServer, redisMissing, startRedis } from '../../../../utils/redis-server';

function stored(id: string, text = id) {
  return { response: { id } as ResponseObject, conversation: [{ role: 'user' as const, content: text }] };
}

const A = 'key:aaaaaaaaaaaa';
const B = 'key:bbbbbbbbbbbb';

describe('RedisResponsesStore over a real redis-server', { skip: redisMissing() }, () => {
  let redis: RedisServer;
  let client: Redis;
  let n = 0;
  /** A store under its own key prefix (tests do not see each other's entries). */
  const store = (o: Partial<ConstructorParameters<typeof RedisResponsesStore>[1]> = {}) =>
    new RedisResponsesStore(client, { keyPrefix: `test${++n}:resp:`, ...o });

  before(async () => {
    redis = await startRedis();
    client = await createRedisClient(redis.url, { warn: () => undefined, log: () => undefined });
    await client.connect();
  });
  after(async () => {
    client?.disconnect();
    await redis?.stop();
  });

  it('saves and gets JSON under llamad:resp: by default; two stores on one server share entries', async () => {
    const a = new RedisResponsesStore(client);
    const b = new RedisResponsesStore(client);
    await a.save(A, 'resp_1', stored('resp_1', 'héllo'));
    assert.deepEqual(await b.get(A, 'resp_1'), stored('resp_1', 'héllo'));
    const keys = await client.keys('llamad:resp:*');
    assert.ok(keys.includes(`llamad:resp:e:${A.length}:${A}:resp_1`), keys.join(' '));
    const raw = await client.get(`llamad:resp:e:${A.length}:${A}:resp_1`);
    assert.deepEqual(JSON.parse(raw!), stored('resp_1', 'héllo'));
    assert.equal(await b.delete(A, 'resp_1'), true);
    assert.equal(await a.get(A, 'resp_1'), undefined);
    assert.equal(await a.size(), 0);
    assert.equal(await a.bytes(), 0);
  });

  it("one principal cannot get or delete another's response (as for an unknown id)", async () => {
    const s = store();
    await s.save(A, 'r', stored('r'));
    assert.equal(await s.get(B, 'r'), undefined);
    assert.equal(await s.get(B, 'unknown'), undefined);
    assert.equal(await s.delete(B, 'r'), false);
    assert.ok(await s.get(A, 'r'), 'still there for its owner');
    assert.equal(await s.delete(A, 'r'), true);
    assert.equal(await s.delete(A, 'r'), false);
    assert.equal(await s.get(A, 'r'), undefined);
  });

  it('an entry expires ttlMs after its creation (PX), and a lookup does not extend it', async () => {
    const s = store({ ttlMs: 300 });
    await s.save(A, 'a', stored('a'));
    const pttl = await client.pttl(`test${n}:resp:e:${A.length}:${A}:a`);
    assert.ok(pttl > 0 && pttl <= 300, String(pttl));
    assert.ok(await s.get(A, 'a'));
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await s.get(A, 'a'), undefined);
    assert.equal(await s.delete(A, 'a'), false);
    // The next save drops the expired entry's bookkeeping.
    await s.save(A, 'b', stored('b'));
    assert.equal(await s.size(), 1);
    assert.equal(await s.bytes(), Buffer.byteLength(JSON.stringify(stored('b'))));
  });

  it('keeps at most maxResponses: the oldest goes first (a lookup does not refresh it)', async () => {
    const s = store({ maxResponses: 2 });
    await s.save(A, 'a', stored('a'));
    await s.save(B, 'b', stored('b'));
    assert.ok(await s.get(A, 'a'));
    await s.save(A, 'c', stored('c'));
    assert.equal(await s.get(A, 'a'), undefined, 'a was the oldest');
    assert.ok(await s.get(B, 'b'));
    assert.ok(await s.get(A, 'c'));
    assert.equal(await s.size(), 2);
  });

  it('is bounded by bytes over all principals; an entry over the bound is not kept (and replaces none)', async () => {
    const big = 'x'.repeat(4000);
    const s = store({ maxBytes: 10_000 });
    await s.save(A, 'a', stored('a', big));
    await s.save(B, 'b', stored('b', big));
    await s.save(A, 'c', stored('c', big));
    assert.equal(await s.get(A, 'a'), undefined, 'a went to make room');
    assert.ok((await s.get(B, 'b')) && (await s.get(A, 'c')));
    assert.ok((await s.bytes()) <= 10_000);
    await s.save(A, 'huge', stored('huge', 'y'.repeat(20_000)));
    assert.equal(await s.get(A, 'huge'), undefined);
    await s.save(A, 'c', stored('c', 'z'.repeat(20_000)));
    assert.equal(await s.get(A, 'c'), undefined, 'the old c is gone, as lru-cache drops it');
    assert.equal(await s.size(), 1);
    assert.equal(await s.bytes(), Buffer.byteLength(JSON.stringify(stored('b', big))));
  });

  it('saving an id again replaces it and counts its bytes once', async () => {
    const s = store();
    await s.save(A, 'r', stored('r', 'one'));
    await s.save(A, 'r', stored('r', 'two, longer'));
    assert.deepEqual((await s.get(A, 'r'))?.conversation, [{ role: 'user', content: 'two, longer' }]);
    assert.equal(await s.size(), 1);
    assert.equal(await s.bytes(), Buffer.byteLength(JSON.stringify(stored('r', 'two, longer'))));
  });

  it('maxResponses 0 keeps nothing and sends nothing', async () => {
    const s = store({ maxResponses: 0 });
    await s.save(A, 'a', stored('a'));
    assert.equal(await s.get(A, 'a'), undefined);
    assert.deepEqual(await client.keys(`test${n}:*`), []);
  });

  it('rejects while Redis is unreachable (ResponsesService turns it into 503)', async () => {
    const down = await createRedisClient('redis://127.0.0.1:1', { warn: () => undefined, log: () => undefined });
    try {
      const s = new RedisResponsesStore(down);
      await assert.rejects(s.get(A, 'a'));
      await assert.rejects(s.save(A, 'a', stored('a')));
    } finally {
      down.disconnect();
    }
  });
});
