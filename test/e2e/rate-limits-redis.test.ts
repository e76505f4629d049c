import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../utils/registry-server';
import { RedisServer, redisMissing, startRedis } from '../utils/redis-server';
import { chat, startTenantHost, TenantHost } from '../utils/tenant-host';

// Issue 33 item 3: two daemons behind one load balancer, sharing one redis-server (LLAMAD_REDIS_URL), enforce one
// budget per principal; when Redis goes away they keep serving, each counting in its own memory.
describe('two daemons sharing one redis-server enforce one budget (FakeBinding)', { skip: redisMissing() }, () => {
  let redis: RedisServer;
  let a: TenantHost;
  let b: TenantHost;
  const policies = {
    shared: { limits: { requests_per_minute: 3 } },
    tokens: { limits: { tokens_per_minute: 300 } },
    outage: { limits: { requests_per_minute: 1 } },
  };

  before(async () => {
    redis = await startRedis();
    a = await startTenantHost(policies, { redisUrl: redis.url });
    b = await startTenantHost(policies, { redisUrl: redis.url });
    for (const host of [a, b]) host.binding.script = () => ({ pieces: ['Hi'] });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await redis?.stop();
  });

  it('requests_per_minute counts the requests of both daemons', async () => {
    const answers = [];
    for (const host of [a, b, a]) answers.push(await chat(host.base, 'openai', 'shared', 5));
    assert.deepEqual(
      answers.map((x) => x.status),
      [200, 200, 200],
    );
    assert.deepEqual(
      answers.map((x) => x.headers.get('x-ratelimit-remaining-requests')),
      ['2', '1', '0'],
    );
    const refused = await chat(b.base, 'anthropic', 'shared', 5);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('anthropic-ratelimit-requests-remaining'), '0');
  });

  it('tokens reserved and used on one daemon count on the other; a reservation over the rest is refused there', async () => {
    const first = await chat(a.base, 'openai', 'tokens', 10);
    assert.equal(first.status, 200);
    const prompt = first.promptTokens!;
    const submitted = b.binding.submitted.length;
    const refused = await chat(b.base, 'openai', 'tokens', 300 - prompt);
    assert.equal(refused.status, 429, JSON.stringify(refused.body));
    assert.equal((refused.body.error as { code: string }).code, 'rate_limit_exceeded');
    assert.equal(b.binding.submitted.length, submitted, 'nothing generated on the second daemon');
    const small = await chat(b.base, 'openai', 'tokens', 10);
    assert.equal(small.status, 200);
    // What the first used (prompt + 1 token, settled) and what this one reserved: both daemons' tokens.
    assert.equal(small.headers.get('x-ratelimit-remaining-tokens'), String(300 - (prompt + 1) - (prompt + 10)));
  });

  it('with Redis gone the daemons keep serving, counting in memory (fail soft)', async () => {
    await redis.stop();
    const during = await chat(a.base, 'openai', 'outage', 5);
    assert.equal(during.status, 200, JSON.stringify(during.body));
    assert.equal((await chat(a.base, 'openai', 'outage', 5)).status, 429, 'still limited, per daemon');
    assert.equal((await chat(b.base, 'openai', 'outage', 5)).status, 200, 'the other daemon has its own count now');
  });
});

describe('a daemon whose Redis is unreachable at start (FakeBinding)', () => {
  it('starts, and limits in its own memory until Redis answers', async () => {
    const port = await freePort();
    const host = await startTenantHost(
      { solo: { limits: { requests_per_minute: 1 } } },
      { redisUrl: `redis://127.0.0.1:${port}` },
    );
    try {
      host.binding.script = () => ({ pieces: ['Hi'] });
      assert.equal((await chat(host.base, 'ollama', 'solo', 5)).status, 200);
      const refused = await chat(host.base, 'ollama', 'solo', 5);
      assert.equal(refused.status, 429);
      assert.equal(refused.headers.get('x-ratelimit-remaining-requests'), '0');
    } finally {
      await host.close();
    }
  });
});
