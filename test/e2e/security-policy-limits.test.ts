import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

const ADMIN = 'sk-admin-limits-0123';
const SLOW = 'sk-slow-limits-4567';
const SMALL = 'sk-small-limits-8901';

/** A keys file whose `user` keys carry limits (the field names): two requests a minute; 100 tokens a minute. */
function keysFile(requestsPerMinute: number): string {
  return JSON.stringify({
    keys: [
      { key: ADMIN, name: 'ops', role: 'admin' },
      { key: SLOW, name: 'slow', role: 'user', models: ['demo'], limits: { requests_per_minute: requestsPerMinute } },
      { key: SMALL, name: 'small', role: 'user', models: ['demo'], limits: { tokens_per_minute: 100 } },
    ],
  });
}

function auth(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
}

// Issue 33: the keys file's `limits` reach the limiter (the rate-limit tests use a host authorizer; this one the
// daemon's own keys file), and what they refuse is reported per name by GET /api/usage.
describe('tenant limits from the keys file (FakeBinding)', () => {
  let t: TestApp;
  let dir: string;
  let file: string;
  const binding = new FakeBinding();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'llamad-policy-limits-'));
    file = join(dir, 'keys.json');
    await writeFile(file, keysFile(2));
    t = await createTestApp({ binding, config: { apiKeysFile: file, allowServerPaths: true } });
    const gguf = join(t.modelsDir, 'm.gguf');
    await writeTinyGguf(gguf, { chatTemplate: '{{ chatml }}' });
    const res = await postJson(
      `${t.baseUrl}/api/create`,
      { model: 'demo', from: gguf, stream: false },
      {
        headers: auth(ADMIN),
      },
    );
    assert.equal(res.status, 200, await res.text());
    binding.script = () => ({ pieces: ['a', 'b', 'c'] });
  });

  after(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  const chat = (key: string, extra: Record<string, unknown> = {}) =>
    postJson(
      `${t.baseUrl}/api/chat`,
      { model: 'demo', stream: false, messages: [{ role: 'user', content: 'hi' }], ...extra },
      { headers: auth(key) },
    );

  it('requests_per_minute: the third request in a minute gets 429 with retry-after; the headers count down', async () => {
    const first = await chat(SLOW);
    assert.equal(first.status, 200, await first.text());
    assert.equal(first.headers.get('x-ratelimit-limit-requests'), '2');
    assert.equal(first.headers.get('x-ratelimit-remaining-requests'), '1');
    const second = await chat(SLOW);
    assert.equal(second.status, 200);
    assert.equal(second.headers.get('x-ratelimit-remaining-requests'), '0');
    const submitted = binding.submitted.length;
    const third = await chat(SLOW);
    assert.equal(third.status, 429);
    const retryAfter = Number(third.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `retry-after ${retryAfter}`);
    assert.match(((await third.json()) as { error: string }).error, /requests_per_minute is 2/);
    assert.equal(binding.submitted.length, submitted, 'the refused request generated nothing');
    // The admin key has no limits: no headers, never refused.
    const admin = await chat(ADMIN);
    assert.equal(admin.status, 200);
    assert.equal(admin.headers.get('x-ratelimit-limit-requests'), null);
  });

  it('a raised limit in the reloaded file applies to the count already made', async () => {
    await writeFile(file, keysFile(5));
    const res = await chat(SLOW);
    assert.equal(res.status, 200, await res.text());
    assert.equal(res.headers.get('x-ratelimit-limit-requests'), '5');
    assert.equal(res.headers.get('x-ratelimit-remaining-requests'), '2', 'three of five used: the refused one is not');
  });

  it('tokens_per_minute: a reservation over the budget is refused on /v1 with rate_limit_exceeded before generation', async () => {
    const submitted = binding.submitted.length;
    const res = await postJson(
      `${t.baseUrl}/v1/chat/completions`,
      { model: 'demo', max_tokens: 500, messages: [{ role: 'user', content: 'hi' }] },
      { headers: auth(SMALL) },
    );
    assert.equal(res.status, 429);
    const body = (await res.json()) as { error: { type: string; code: string } };
    assert.equal(body.error.code, 'rate_limit_exceeded');
    assert.equal(binding.submitted.length, submitted, 'no token was generated');
    const small = await postJson(
      `${t.baseUrl}/v1/chat/completions`,
      { model: 'demo', max_tokens: 3, messages: [{ role: 'user', content: 'hi' }] },
      { headers: auth(SMALL) },
    );
    assert.equal(small.status, 200, `${small.status} ${await small.clone().text()}`);
    assert.equal(small.headers.get('x-ratelimit-limit-tokens'), '100');
  });

  it('GET /api/usage reports each name’s requests and refusals; a user key may not read it', async () => {
    assert.equal((await fetch(`${t.baseUrl}/api/usage`, { headers: auth(SLOW) })).status, 403);
    const res = await fetch(`${t.baseUrl}/api/usage`, { headers: auth(ADMIN) });
    assert.equal(res.status, 200);
    const body = (await res.json()) as {
      usage: Array<{
        principal: string;
        model: string;
        requests: number;
        prompt_tokens: number;
        completion_tokens: number;
        refusals: Record<string, number>;
      }>;
    };
    const slow = body.usage.filter((row) => row.principal === 'slow');
    assert.equal(
      slow.reduce((n, row) => n + row.refusals.requests_per_minute, 0),
      1,
    );
    assert.equal(
      slow.reduce((n, row) => n + row.refusals.forbidden, 0),
      1,
    );
    // The refused reservation ran no generation: only the admitted request's prompt and reply are counted.
    const used = body.usage.find((row) => row.principal === 'small' && row.model === 'demo:latest');
    assert.equal(used?.completion_tokens, 3);
    assert.equal(used?.prompt_tokens, 53, 'one 53-token prompt (the refused one is not counted)');
    const small = body.usage.filter((row) => row.principal === 'small');
    assert.equal(
      small.reduce((n, row) => n + row.refusals.tokens_per_minute, 0),
      1,
    );
    assert.ok(!body.usage.some((row) => row.principal.includes('sk-')), 'no key is ever reported');
  });
});
