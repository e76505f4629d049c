import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SchedulerService } from '../../../../src/scheduler/scheduler.service';
import { GenerationHooksRegistry, HttpObservation, RequestContext } from '../../../../src/observability';
import {
  InMemoryUsageStore,
  MAX_USAGE_PRINCIPALS,
  MetricsService,
  UsageRecord,
  UsageService,
  UsageStore,
} from '../../../../src/operations';

/** The value of one sample line (`name{labels} value`) of an exposition, or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** A request context as the hooks leave it at the end of a request. */
function ctx(
  principal: string | undefined,
  name?: string,
  generation?: { model: string; prompt: number; cached: number; completion: number },
  refusal?: string,
): RequestContext {
  const c = new RequestContext('r', 'POST', '/api/chat');
  c.principal = principal;
  c.principalName = name ?? principal;
  if (generation) {
    c.addGeneration({
      model: generation.model,
      promptTokens: generation.prompt,
      cachedTokens: generation.cached,
      completionTokens: generation.completion,
    });
  }
  c.refusal = refusal;
  return c;
}

function metricsWith(usage: UsageService) {
  const scheduler = {
    stats: () => ({ queued: 0, running: 0, runners: [], pendingLoads: [] }),
  } as unknown as SchedulerService;
  return new MetricsService(new GenerationHooksRegistry(), scheduler, new HttpObservation(), undefined, usage);
}

describe('UsageService', () => {
  it('records requests with a principal under its name, with the generation tokens and a bounded refusal', () => {
    const recorded: UsageRecord[] = [];
    const usage = new UsageService({ record: (e) => void recorded.push(e), query: () => ({}) as never });
    assert.equal(usage.record(ctx(undefined)), undefined, 'a public route or a 401: no principal, not counted');
    usage.record(ctx('key:0123456789ab', 'team-a', { model: 'demo:latest', prompt: 12, cached: 4, completion: 7 }));
    usage.record(ctx('tenant:acme'));
    usage.record(ctx('key:0123456789ab', 'team-a', undefined, 'tokens_per_day'));
    usage.record(ctx('key:0123456789ab', 'team-a', undefined, 'made_up'));
    assert.deepEqual(recorded, [
      { principal: 'team-a', model: 'demo:latest', promptTokens: 12, cachedTokens: 4, completionTokens: 7 },
      { principal: 'tenant:acme', model: '', promptTokens: 0, cachedTokens: 0, completionTokens: 0 },
      {
        principal: 'team-a',
        model: '',
        promptTokens: 0,
        cachedTokens: 0,
        completionTokens: 0,
        refusal: 'tokens_per_day',
      },
      { principal: 'team-a', model: '', promptTokens: 0, cachedTokens: 0, completionTokens: 0, refusal: 'other' },
    ]);
  });

  it('survives a store that throws or rejects', () => {
    const throwing: UsageStore = {
      record: () => {
        throw new Error('db down');
      },
      query: () => ({ startMs: 0, endMs: 0, rows: [] }),
    };
    assert.ok(new UsageService(throwing).record(ctx('a')));
    const rejecting: UsageStore = { ...throwing, record: () => Promise.reject(new Error('db down')) };
    assert.ok(new UsageService(rejecting).record(ctx('a')));
  });

  it('reports snake_case rows with every known refusal reason, over start-up → now by default', async () => {
    const usage = new UsageService(new InMemoryUsageStore());
    usage.record(ctx('k', 'team-a', { model: 'demo:latest', prompt: 10, cached: 2, completion: 3 }));
    usage.record(ctx('k', 'team-a', undefined, 'requests_per_minute'));
    const body = await usage.report({});
    assert.match(body.start, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(Date.parse(body.end) >= Date.parse(body.start));
    const zero = {
      requests_per_minute: 0,
      tokens_per_minute: 0,
      tokens_per_day: 0,
      concurrent_requests: 0,
      forbidden: 0,
    };
    assert.deepEqual(body.usage, [
      {
        principal: 'team-a',
        model: '',
        requests: 1,
        prompt_tokens: 0,
        cached_tokens: 0,
        completion_tokens: 0,
        refusals: { ...zero, requests_per_minute: 1 },
      },
      {
        principal: 'team-a',
        model: 'demo:latest',
        requests: 1,
        prompt_tokens: 10,
        cached_tokens: 2,
        completion_tokens: 3,
        refusals: zero,
      },
    ]);
    await assert.rejects(usage.report({ start: 'soon' }), /invalid start "soon"/);
  });
});

describe('usage counters (MetricsService)', () => {
  it('count each finished request per principal name and model, refusals by reason', async () => {
    const usage = new UsageService(new InMemoryUsageStore());
    const metrics = metricsWith(usage);
    const gen = { model: 'demo:latest', prompt: 10, cached: 4, completion: 5 };
    metrics.observeHttp('POST', '/api/chat', 200, 0.1, ctx('key:aaaaaaaaaaaa', 'team-a', gen));
    metrics.observeHttp('POST', '/api/chat', 200, 0.1, ctx('key:aaaaaaaaaaaa', 'team-a', gen));
    metrics.observeHttp(
      'POST',
      '/api/chat',
      429,
      0.1,
      ctx('key:bbbbbbbbbbbb', 'team-b', undefined, 'tokens_per_minute'),
    );
    metrics.observeHttp('GET', '/health', 200, 0.1, ctx(undefined));
    metrics.observeHttp('GET', '/health', 200, 0.1);
    const text = await metrics.render();
    const a = '{principal="team-a",model="demo:latest"}';
    assert.equal(sample(text, `llamad_usage_requests_total${a}`), 2);
    assert.equal(sample(text, `llamad_usage_prompt_tokens_total${a}`), 20);
    assert.equal(sample(text, `llamad_usage_cached_tokens_total${a}`), 8);
    assert.equal(sample(text, `llamad_usage_completion_tokens_total${a}`), 10);
    assert.equal(sample(text, 'llamad_usage_requests_total{principal="team-b",model=""}'), 1);
    assert.equal(
      sample(text, 'llamad_usage_refusals_total{principal="team-b",model="",reason="tokens_per_minute"}'),
      1,
    );
    assert.equal(text.match(/^llamad_usage_requests_total\{/gm)?.length, 2, 'no series for unauthenticated requests');
    assert.doesNotMatch(text, /key:aaaa/, 'reported under the name, not the principal id');
  });

  it(`keep at most ${MAX_USAGE_PRINCIPALS} principal names; later ones count as other`, async () => {
    const metrics = metricsWith(new UsageService(new InMemoryUsageStore()));
    for (let i = 0; i < MAX_USAGE_PRINCIPALS + 20; i++) {
      metrics.observeHttp('GET', '/api/tags', 200, 0.01, ctx(`tenant-${i}`));
    }
    const text = await metrics.render();
    assert.equal(text.match(/^llamad_usage_requests_total\{/gm)?.length, MAX_USAGE_PRINCIPALS + 1);
    assert.equal(sample(text, 'llamad_usage_requests_total{principal="other",model=""}'), 20);
    assert.equal(sample(text, 'llamad_usage_requests_total{principal="tenant-0",model=""}'), 1);
  });
});
