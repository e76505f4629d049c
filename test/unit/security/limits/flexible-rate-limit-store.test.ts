import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { createRedisClient, FlexibleRateLimitStore, redactedUrl } from '../../../../src/security/limits';
import { RedisServer, redisMissing, startRedis } from '../../../utils/redis-server';

/** Waits until `check` holds (a bounded wait for a reconnect, not a timing assertion). */
async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('FlexibleRateLimitStore', () => {
  it('in memory: fixed windows per principal and window, refunds, no count = undefined', async () => {
    const store = new FlexibleRateLimitStore();
    assert.equal(await store.get('tokens_per_day', 'a'), undefined);
    const c = await store.consume('tokens_per_day', 'a', 500);
    assert.equal(c.consumed, 500);
    assert.ok(c.resetMs > 86_000_000 && c.resetMs <= 86_400_000);
    await store.consume('tokens_per_day', 'a', 100);
    await store.refund('tokens_per_day', 'a', 200);
    assert.equal((await store.get('tokens_per_day', 'a'))?.consumed, 400);
    assert.equal(await store.get('tokens_per_minute', 'a'), undefined, 'windows are separate');
    assert.equal(await store.get('tokens_per_day', 'b'), undefined, 'principals are separate');
  });

  it('redactedUrl hides a password', () => {
    assert.equal(redactedUrl('redis://:hunter2@cache:6379/0'), 'redis://:***@cache:6379/0');
    assert.equal(redactedUrl('rediss://cache:6380'), 'rediss://cache:6380');
  });
});

describe('FlexibleRateLimitStore over a real redis-server', { skip: redisMissing() }, () => {
  let redis: RedisServer;
  const clients: Redis[] = [];
  const quiet = { warn: () => undefined, log: () => undefined };

  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    await redis?.stop();
  });

  const connected = async (logger: { warn(m: string): void; log(m: string): void } = quiet) => {
    const client = await createRedisClient(redis.url, logger);
    clients.push(client);
    await client.connect();
    return client;
  };

  it('two stores (two replicas) on one server share one count', async () => {
    const a = new FlexibleRateLimitStore({ redis: await connected() });
    const b = new FlexibleRateLimitStore({ redis: await connected() });
    await a.consume('requests_per_minute', 'key:1', 1);
    const c = await b.consume('requests_per_minute', 'key:1', 1);
    assert.equal(c.consumed, 2);
    assert.ok(c.resetMs > 58_000 && c.resetMs <= 60_000, String(c.resetMs));
    await a.refund('requests_per_minute', 'key:1', 1);
    assert.equal((await b.get('requests_per_minute', 'key:1'))?.consumed, 1);
    assert.equal(await b.get('requests_per_minute', 'key:2'), undefined);
  });

  it('Redis down: counts go on in memory (one warning per outage), and back to Redis when it returns', async () => {
    const lines: string[] = [];
    const client = await connected({
      warn: (m: string) => lines.push(`warn ${m}`),
      log: (m: string) => lines.push(`log ${m}`),
    });
    const store = new FlexibleRateLimitStore({ redis: client });
    await store.consume('tokens_per_minute', 'p', 10);
    const port = redis.port;
    await redis.stop();
    await until(() => client.status !== 'ready', 'the client to notice the outage');
    const during = await store.consume('tokens_per_minute', 'p', 7);
    assert.equal(during.consumed, 7, 'the in-memory insurance limiter counts from 0');
    await store.consume('tokens_per_minute', 'p', 1);
    await until(() => lines.some((l) => l.startsWith('warn Redis at')), 'the warning');
    redis = await startRedis(port);
    await until(() => client.status === 'ready', 'the reconnect');
    await until(() => lines.some((l) => l.startsWith('log Redis at')), 'the recovery line');
    assert.equal(lines.filter((l) => l.startsWith('warn')).length, 1, lines.join('\n'));
    const back = await store.consume('tokens_per_minute', 'p', 2);
    assert.equal(back.consumed, 2, 'a fresh server (no persistence) counts from 0 again');
  });
});
