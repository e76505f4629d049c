import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  AUTHORIZER,
  AuthorizationRequest,
  Principal,
  RequestAuthorizer,
  UnauthorizedError,
  USAGE_STORE,
  UsageRecord,
  UsageResponseWire,
  UsageRowWire,
  UsageStore,
} from '../../src';
import { FakeBinding } from '../utils/fake-binding';
import { postJson } from '../utils/ndjson';
import { FakeHost, startFakeHost } from '../utils/tenant-host';
import { createTestApp, TestApp } from '../utils/test-app';

/** A host authorizer naming tenants with policies: `acme` is an admin, `globex` a user (issue 33 items 1 and 6). */
class TenantAuthorizer implements RequestAuthorizer {
  authorize(request: AuthorizationRequest): Promise<Principal> {
    const tenant = request.headers['x-tenant'];
    if (tenant === 'acme') return Promise.resolve({ id: 'tenant:1', name: 'acme', policy: { role: 'admin' } });
    if (tenant === 'globex') {
      return Promise.resolve({ id: 'tenant:2', name: 'globex', policy: { name: 'globex', role: 'user' } });
    }
    return Promise.reject(new UnauthorizedError());
  }
}

/** Polls `read` until `done(value)` (the counters are fed when each response has ended); a bound for a hang. */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  let value = await read();
  for (let i = 0; i < 200 && !done(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    value = await read();
  }
  return value;
}

/** The value of one sample line (`name{labels} value`) of an exposition, or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

// Issue 33 item 5: usage per caller — two tenants of a host's authorizer use a model; /metrics counts per tenant
// name and model, GET /api/usage reports the same to an admin, refuses a user (403, itself counted as a refusal)
// and a bad range (400).
describe('usage per caller in a host application (FakeBinding)', () => {
  let base: string;
  let host: FakeHost;
  const binding = new FakeBinding();
  const json = (tenant: string) => ({ 'content-type': 'application/json', 'x-tenant': tenant });
  const expected = new Map<string, { requests: number; prompt: number; completion: number }>();

  before(async () => {
    host = await startFakeHost({
      providers: [{ provide: AUTHORIZER, useClass: TenantAuthorizer }],
      binding,
      createHeaders: { 'x-tenant': 'acme' },
    });
    base = host.base;
    binding.script = () => ({ pieces: ['Hi', ' there'] });
    const run = async (tenant: string, path: string, body: object) => {
      const r = await postJson(`${base}${path}`, body, { headers: json(tenant) });
      assert.equal(r.status, 200, await r.clone().text());
      const out = (await r.json()) as { prompt_eval_count: number; eval_count: number };
      const e = expected.get(tenant) ?? { requests: 0, prompt: 0, completion: 0 };
      expected.set(tenant, {
        requests: e.requests + 1,
        prompt: e.prompt + out.prompt_eval_count,
        completion: e.completion + out.eval_count,
      });
    };
    const chat = { model: 'fake', messages: [{ role: 'user', content: 'hello' }], stream: false };
    await run('acme', '/api/chat', chat);
    await run('acme', '/api/chat', chat);
    await run('globex', '/api/generate', { model: 'fake', prompt: 'hi there', stream: false });
  });

  after(async () => {
    await host?.close();
  });

  it('/metrics counts requests and tokens per tenant name and model', async () => {
    const text = await eventually(
      async () => (await fetch(`${base}/metrics`, { headers: { 'x-tenant': 'acme' } })).text(),
      (t) => sample(t, 'llamad_usage_requests_total{principal="globex",model="fake:latest"}') === 1,
    );
    for (const [tenant, e] of expected) {
      const labels = `{principal="${tenant}",model="fake:latest"}`;
      assert.equal(sample(text, `llamad_usage_requests_total${labels}`), e.requests, tenant);
      assert.equal(sample(text, `llamad_usage_prompt_tokens_total${labels}`), e.prompt, tenant);
      assert.equal(sample(text, `llamad_usage_completion_tokens_total${labels}`), e.completion, tenant);
      assert.ok(e.prompt > 0 && e.completion > 0);
      assert.notEqual(sample(text, `llamad_usage_cached_tokens_total${labels}`), undefined);
    }
    assert.doesNotMatch(text, /principal="tenant:/, 'reported under the name, not the id');
  });

  it('GET /api/usage reports the same per tenant and model to an admin; a user gets 403, counted as a refusal', async () => {
    const forbidden = await fetch(`${base}/api/usage`, { headers: { 'x-tenant': 'globex' } });
    assert.equal(forbidden.status, 403);
    assert.match(((await forbidden.json()) as { error: string }).error, /forbidden/);
    const row = (body: UsageResponseWire, principal: string, model: string): UsageRowWire | undefined =>
      body.usage.find((r) => r.principal === principal && r.model === model);
    const body = await eventually(
      async () => {
        const res = await fetch(`${base}/api/usage`, { headers: { 'x-tenant': 'acme' } });
        assert.equal(res.status, 200);
        return (await res.json()) as UsageResponseWire;
      },
      (b) => (row(b, 'globex', '')?.refusals.forbidden ?? 0) === 1,
    );
    for (const [tenant, e] of expected) {
      const r = row(body, tenant, 'fake:latest');
      assert.ok(r, tenant);
      assert.equal(r.requests, e.requests, tenant);
      assert.equal(r.prompt_tokens, e.prompt, tenant);
      assert.equal(r.completion_tokens, e.completion, tenant);
      assert.ok(r.cached_tokens >= 0 && r.cached_tokens <= r.prompt_tokens);
      assert.equal(r.refusals.requests_per_minute, 0);
    }
    assert.equal(row(body, 'globex', '')?.refusals.forbidden, 1, "the user's 403 is a refusal");
    assert.ok(Date.parse(body.start) <= Date.parse(body.end));
    const metrics = await (await fetch(`${base}/metrics`, { headers: { 'x-tenant': 'acme' } })).text();
    assert.equal(sample(metrics, 'llamad_usage_refusals_total{principal="globex",model="",reason="forbidden"}'), 1);
  });

  it('GET /api/usage takes a range (RFC 3339 or unix seconds) and answers 400 for a bad one', async () => {
    const get = (query: string) => fetch(`${base}/api/usage${query}`, { headers: { 'x-tenant': 'acme' } });
    const bad = await get('?start=yesterday');
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { error: string }).error, /^invalid start "yesterday": expected an RFC 3339/);
    assert.equal((await get('?start=20&end=10')).status, 400);
    const past = (await (await get('?start=1000000000&end=2001-09-09T01:46:41Z')).json()) as UsageResponseWire;
    assert.deepEqual(past.usage, [], 'nothing happened before start-up');
    const now = Math.floor(Date.now() / 1000);
    const recent = (await (await get(`?start=${now - 3600}&end=${now + 60}`)).json()) as UsageResponseWire;
    assert.ok(recent.usage.some((r) => r.principal === 'acme' && r.model === 'fake:latest'));
  });
});

// The daemon (createApp, every route observed): a key without a policy file is an admin reported as `key:<12 hex>`,
// never as the key; public routes and 401s are not counted.
describe('usage per caller in the daemon (API keys, FakeBinding)', () => {
  let t: TestApp;
  const key = 'sk-usage-secret-0123456789';
  const auth = { authorization: `Bearer ${key}` };

  before(async () => {
    t = await createTestApp({ binding: new FakeBinding(), config: { apiKeys: [key] } });
  });

  after(() => t?.close());

  it('reports the key as key:<12 hex> and never the key itself', async () => {
    assert.equal((await fetch(`${t.baseUrl}/api/tags`, { headers: auth })).status, 200);
    assert.equal((await fetch(`${t.baseUrl}/api/tags`)).status, 401);
    assert.equal((await fetch(`${t.baseUrl}/api/version`)).status, 200);
    let polls = 0;
    const body = await eventually(
      async () => {
        polls++;
        return (await (await fetch(`${t.baseUrl}/api/usage`, { headers: auth })).json()) as UsageResponseWire;
      },
      (b) => b.usage.length > 0,
    );
    assert.equal(body.usage.length, 1, JSON.stringify(body));
    assert.match(body.usage[0].principal, /^key:[0-9a-f]{12}$/);
    assert.equal(body.usage[0].model, '');
    // The /api/tags call and at most the earlier polls (each counted when its response ended); not the 401, not the
    // public route.
    assert.ok(body.usage[0].requests >= 1 && body.usage[0].requests <= polls, `${body.usage[0].requests} > ${polls}`);
    const metrics = await (await fetch(`${t.baseUrl}/metrics`, { headers: auth })).text();
    assert.ok(metrics.includes(`llamad_usage_requests_total{principal="${body.usage[0].principal}",model=""}`));
    assert.ok(!metrics.includes(key) && !JSON.stringify(body).includes(key));
  });
});

// A host replaces the store through the USAGE_STORE token (e.g. a database its replicas share).
describe('a host-provided USAGE_STORE', () => {
  let base: string;
  let host: FakeHost;
  const records: UsageRecord[] = [];
  const store: UsageStore = {
    record: (entry) => {
      records.push(entry);
      return Promise.resolve();
    },
    query: (startMs, endMs) =>
      Promise.resolve({
        startMs,
        endMs,
        rows: [
          {
            principal: 'from-db',
            model: 'm',
            requests: 7,
            promptTokens: 1,
            cachedTokens: 0,
            completionTokens: 2,
            refusals: { tokens_per_day: 1 },
          },
        ],
      }),
  };

  before(async () => {
    host = await startFakeHost({
      providers: [
        { provide: AUTHORIZER, useClass: TenantAuthorizer },
        { provide: USAGE_STORE, useValue: store },
      ],
      models: [],
      createHeaders: {},
    });
    base = host.base;
  });

  after(async () => {
    await host?.close();
  });

  it('records into it and answers /api/usage from it', async () => {
    assert.equal((await fetch(`${base}/api/tags`, { headers: { 'x-tenant': 'globex' } })).status, 200);
    const res = await fetch(`${base}/api/usage?start=0`, { headers: { 'x-tenant': 'acme' } });
    assert.equal(res.status, 200);
    const body = (await res.json()) as UsageResponseWire;
    assert.equal(body.start, '1970-01-01T00:00:00.000Z', "the host store's range as it answered");
    assert.deepEqual(body.usage, [
      {
        principal: 'from-db',
        model: 'm',
        requests: 7,
        prompt_tokens: 1,
        cached_tokens: 0,
        completion_tokens: 2,
        refusals: {
          requests_per_minute: 0,
          tokens_per_minute: 0,
          tokens_per_day: 1,
          concurrent_requests: 0,
          forbidden: 0,
        },
      },
    ]);
    await eventually(
      () => Promise.resolve(records.length),
      (n) => n >= 1,
    );
    assert.deepEqual(records[0], {
      principal: 'globex',
      model: '',
      promptTokens: 0,
      cachedTokens: 0,
      completionTokens: 0,
    });
  });
});
