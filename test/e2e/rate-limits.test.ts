import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { postJson } from '../utils/ndjson';
import { chat, ChatAnswer, Dialect, startTenantHost, TenantHost } from '../utils/tenant-host';

const DIALECTS: Dialect[] = ['openai', 'anthropic', 'ollama'];

/** Token limit of the `tpm-*` tenants: above every prompt of these tests, below the context (512). */
const TPM = 400;

/** The request-window headers of a dialect: [limit, remaining, reset] (shared-service.md §1, §2). */
function requestHeaders(a: ChatAnswer, dialect: Dialect): [string | null, string | null, string | null] {
  const h = a.headers;
  if (dialect === 'anthropic') {
    return [
      h.get('anthropic-ratelimit-requests-limit'),
      h.get('anthropic-ratelimit-requests-remaining'),
      h.get('anthropic-ratelimit-requests-reset'),
    ];
  }
  return [
    h.get('x-ratelimit-limit-requests'),
    h.get('x-ratelimit-remaining-requests'),
    h.get('x-ratelimit-reset-requests'),
  ];
}

/** The token-window headers of a dialect: [limit, remaining, reset]. */
function tokenHeaders(a: ChatAnswer, dialect: Dialect): [string | null, string | null, string | null] {
  const h = a.headers;
  if (dialect === 'anthropic') {
    return [
      h.get('anthropic-ratelimit-tokens-limit'),
      h.get('anthropic-ratelimit-tokens-remaining'),
      h.get('anthropic-ratelimit-tokens-reset'),
    ];
  }
  return [h.get('x-ratelimit-limit-tokens'), h.get('x-ratelimit-remaining-tokens'), h.get('x-ratelimit-reset-tokens')];
}

/** A reset value in the dialect's format: a Go duration within the window, or an RFC 3339 time within it. */
function assertReset(value: string | null, dialect: Dialect, windowMs: number): void {
  assert.ok(value, 'reset header present');
  if (dialect === 'anthropic') {
    assert.match(value, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const ms = Date.parse(value) - Date.now();
    assert.ok(ms > -1000 && ms <= windowMs + 1000, `${value} is within the window`);
    return;
  }
  assert.match(value, /^(\d+ms|(\d+h)?(\d+m)?\d+(\.\d+)?s)$/, value);
}

/** The 429 body of a dialect: its error type and message. */
function assertRefusal(a: ChatAnswer, dialect: Dialect, openAIType: string, message: RegExp): void {
  assert.equal(a.status, 429, JSON.stringify(a.body));
  const retryAfter = Number(a.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1, `retry-after ${a.headers.get('retry-after')}`);
  assert.ok(Number(a.headers.get('retry-after-ms')) >= 1);
  if (dialect === 'openai') {
    const err = a.body.error as { type: string; code: string; message: string; param: unknown };
    assert.equal(err.type, openAIType);
    assert.equal(err.code, openAIType);
    assert.equal(err.param, null);
    assert.match(err.message, message);
  } else if (dialect === 'anthropic') {
    assert.equal(a.body.type, 'error');
    const err = a.body.error as { type: string; message: string };
    assert.equal(err.type, 'rate_limit_error');
    assert.match(err.message, message);
    assert.ok(a.headers.get('request-id'));
  } else {
    assert.deepEqual(Object.keys(a.body), ['error']);
    assert.match(a.body.error as string, message);
  }
}

// Issue 33 items 2 and 3: limits per principal with each dialect's 429 and headers (FakeBinding: decode speed is
// irrelevant here; the fake records every generation it was asked for).
describe('tenant rate limits in the three dialects (host AUTHORIZER with policies, FakeBinding)', () => {
  let host: TenantHost;
  const policies = {
    ...Object.fromEntries(DIALECTS.map((d) => [`rpm-${d}`, { limits: { requests_per_minute: 2 } }])),
    ...Object.fromEntries(DIALECTS.map((d) => [`tpm-${d}`, { limits: { tokens_per_minute: TPM } }])),
    quota: { limits: { tokens_per_day: TPM } },
    conc: { limits: { concurrent_requests: 1 } },
    stream: { limits: { requests_per_minute: 10, tokens_per_minute: 1000 } },
  };

  before(async () => {
    host = await startTenantHost(policies);
    host.binding.script = () => ({ pieces: ['Hi'] });
  });
  after(async () => {
    await host?.close();
  });

  for (const dialect of DIALECTS) {
    it(`requests_per_minute: 2 pass with the headers, the 3rd gets ${dialect}'s 429 before its body is read`, async () => {
      const tenant = `rpm-${dialect}`;
      const first = await chat(host.base, dialect, tenant, 5);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const [limit, remaining, reset] = requestHeaders(first, dialect);
      assert.equal(limit, '2');
      assert.equal(remaining, '1');
      assertReset(reset, dialect, 60_000);
      assert.deepEqual(tokenHeaders(first, dialect), [null, null, null], 'no token limit, no token headers');
      const second = await chat(host.base, dialect, tenant, 5);
      assert.equal(requestHeaders(second, dialect)[1], '0');
      const submitted = host.binding.submitted.length;
      const third = await chat(host.base, dialect, tenant, 5);
      assertRefusal(third, dialect, 'rate_limit_exceeded', /requests_per_minute is 2/);
      assert.ok(Number(third.headers.get('retry-after')) <= 61);
      assert.equal(third.headers.get('x-should-retry'), null);
      assert.deepEqual(requestHeaders(third, dialect).slice(0, 2), ['2', '0']);
      assert.equal(host.binding.submitted.length, submitted, 'nothing generated');
    });

    it(`tokens_per_minute: a reservation over the remaining budget is refused before generation (${dialect})`, async () => {
      const tenant = `tpm-${dialect}`;
      const first = await chat(host.base, dialect, tenant, 10);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const prompt = first.promptTokens!;
      assert.ok(prompt > 0 && prompt + 10 < TPM, `prompt ${prompt}`);
      const [limit, remaining, reset] = tokenHeaders(first, dialect);
      assert.equal(limit, String(TPM));
      assert.equal(remaining, String(TPM - prompt - 10), 'prompt + output limit reserved');
      assertReset(reset, dialect, 60_000);
      // The first used prompt + 1 token (settled); prompt + (TPM - prompt) = TPM would fit an empty window only.
      const submitted = host.binding.submitted.length;
      const refused = await chat(host.base, dialect, tenant, TPM - prompt);
      assertRefusal(refused, dialect, 'rate_limit_exceeded', /tokens_per_minute is 400/);
      assert.equal(refused.headers.get('x-should-retry'), null, 'retried by the SDKs');
      assert.equal(tokenHeaders(refused, dialect)[0], String(TPM));
      assert.equal(host.binding.submitted.length, submitted, 'no token was generated for the refused request');
      // Larger than the whole limit: never admissible, so the SDKs are told not to retry.
      const tooLarge = await chat(host.base, dialect, tenant, TPM);
      assertRefusal(tooLarge, dialect, 'rate_limit_exceeded', /request too large/);
      assert.equal(tooLarge.headers.get('x-should-retry'), 'false');
      assert.equal(host.binding.submitted.length, submitted);
      // What is left still serves a small request.
      assert.equal((await chat(host.base, dialect, tenant, 10)).status, 200);
    });
  }

  it('tokens_per_day: insufficient_quota with x-should-retry: false (OpenAI), before generation', async () => {
    const first = await chat(host.base, 'openai', 'quota', 10);
    assert.equal(first.status, 200);
    const submitted = host.binding.submitted.length;
    const refused = await chat(host.base, 'openai', 'quota', TPM - first.promptTokens!);
    assertRefusal(refused, 'openai', 'insufficient_quota', /tokens_per_day is 400/);
    assert.equal(refused.headers.get('x-should-retry'), 'false');
    assert.ok(Number(refused.headers.get('retry-after')) > 80_000, 'the day window resets hours later');
    assert.equal(host.binding.submitted.length, submitted);
  });

  it('concurrent_requests: a second request while one streams gets 429; the slot comes back at the end', async () => {
    host.binding.script = () => ({ pieces: ['a', 'b', 'c', 'd', 'e'], delayMs: 100 });
    try {
      const headers = { 'content-type': 'application/json', 'x-tenant': 'conc' };
      const streaming = await postJson(
        `${host.base}/api/generate`,
        { model: 'fake', prompt: 'hi', stream: true },
        { headers },
      );
      assert.equal(streaming.status, 200);
      const second = await chat(host.base, 'ollama', 'conc', 5);
      assertRefusal(second, 'ollama', 'rate_limit_exceeded', /concurrent_requests is 1/);
      await streaming.text();
      // The slot is given back when the response closes (a moment after its last byte).
      let third = await chat(host.base, 'ollama', 'conc', 5);
      for (let i = 0; i < 20 && third.status === 429; i++) {
        await new Promise((r) => setTimeout(r, 50));
        third = await chat(host.base, 'ollama', 'conc', 5);
      }
      assert.equal(third.status, 200, JSON.stringify(third.body));
    } finally {
      host.binding.script = () => ({ pieces: ['Hi'] });
    }
  });

  it('streamed responses carry the request and token headers (set before the first byte)', async () => {
    const headers = { 'content-type': 'application/json', 'x-tenant': 'stream', 'anthropic-version': '2023-06-01' };
    const messages = [{ role: 'user', content: 'hi' }];
    const openai = await postJson(
      `${host.base}/v1/chat/completions`,
      { model: 'fake', messages, max_tokens: 20, stream: true },
      { headers },
    );
    assert.equal(openai.status, 200);
    assert.match(openai.headers.get('content-type') ?? '', /text\/event-stream/);
    assert.equal(openai.headers.get('x-ratelimit-limit-requests'), '10');
    assert.equal(openai.headers.get('x-ratelimit-remaining-requests'), '9');
    assert.equal(openai.headers.get('x-ratelimit-limit-tokens'), '1000');
    assert.ok(Number(openai.headers.get('x-ratelimit-remaining-tokens')) < 1000 - 20);
    assert.match(await openai.text(), /\[DONE\]/);
    const anthropic = await postJson(
      `${host.base}/v1/messages`,
      { model: 'fake', messages, max_tokens: 20, stream: true },
      { headers },
    );
    assert.equal(anthropic.status, 200);
    assert.equal(anthropic.headers.get('anthropic-ratelimit-requests-remaining'), '8');
    assert.equal(anthropic.headers.get('anthropic-ratelimit-tokens-limit'), '1000');
    assert.match(anthropic.headers.get('anthropic-ratelimit-tokens-reset') ?? '', /Z$/);
    assert.match(await anthropic.text(), /message_stop/);
    const ollama = await postJson(`${host.base}/api/generate`, { model: 'fake', prompt: 'hi' }, { headers });
    assert.equal(ollama.headers.get('x-ratelimit-remaining-requests'), '7');
    assert.ok(ollama.headers.get('x-ratelimit-remaining-tokens'));
    await ollama.text();
  });

  it('a principal without limits is not counted and gets no rate-limit headers; unmetered routes neither', async () => {
    const free = await chat(host.base, 'openai', 'admin', 5);
    assert.equal(free.status, 200);
    assert.deepEqual(
      [...free.headers.keys()].filter((k) => k.includes('ratelimit')),
      [],
    );
    const tags = await fetch(`${host.base}/api/tags`, { headers: { 'x-tenant': 'rpm-ollama' } });
    assert.equal(tags.status, 200, 'the exhausted tenant may still list models');
    assert.equal(tags.headers.get('x-ratelimit-limit-requests'), null);
  });
});
