import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import type { SchedulerService, SchedulerStats } from '../../../../src/scheduler/scheduler.service';
import { GenerationHooksRegistry, HttpObservation } from '../../../../src/observability';
import { MetricsService, PerTokenHistogram } from '../../../../src/operations';

/** The value of one sample line (`name{labels} value`) of an exposition, or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

function service(stats: SchedulerStats) {
  const hooks = new GenerationHooksRegistry();
  const observation = new HttpObservation();
  const scheduler = { stats: () => stats } as unknown as SchedulerService;
  const metrics = new MetricsService(hooks, scheduler, observation);
  return { hooks, observation, metrics };
}

const idle: SchedulerStats = { queued: 0, running: 0, runners: [], pendingLoads: [] };

describe('MetricsService', () => {
  it('counts HTTP requests by method, route pattern and status, with a duration histogram', async () => {
    const { metrics, observation } = service(idle);
    assert.equal(observation.sink, metrics);
    metrics.observeHttp('POST', '/api/chat', 200, 0.3);
    metrics.observeHttp('POST', '/api/chat', 200, 2);
    metrics.observeHttp('GET', 'unmatched', 404, 0.001);
    const text = await metrics.render();
    assert.equal(sample(text, 'llamad_http_requests_total{method="POST",route="/api/chat",status="200"}'), 2);
    assert.equal(sample(text, 'llamad_http_requests_total{method="GET",route="unmatched",status="404"}'), 1);
    assert.equal(
      sample(
        text,
        'llamad_http_request_duration_seconds_bucket{le="0.5",method="POST",route="/api/chat",status="200"}',
      ),
      1,
    );
    assert.equal(
      sample(text, 'llamad_http_request_duration_seconds_count{method="POST",route="/api/chat",status="200"}'),
      2,
    );
    assert.match(metrics.contentType, /^text\/plain; version=0\.0\.4/);
    assert.match(text, /^process_cpu_user_seconds_total /m, 'default process collectors');
  });

  it('counts tokens, time to first token and inter-token gaps from the request hooks', async () => {
    const { metrics, hooks } = service(idle);
    const tracker = hooks.begin('tiny:latest', 'chat', process.hrtime.bigint());
    tracker.token();
    tracker.token();
    tracker.token();
    tracker.finish(
      {
        totalDurationNs: 1e6,
        promptEvalCount: 12,
        promptCachedCount: 4,
        promptEvalDurationNs: 1,
        evalCount: 3,
        evalDurationNs: 1,
      },
      'stop',
    );
    const text = await metrics.render();
    assert.equal(sample(text, 'llamad_prompt_tokens_total{model="tiny:latest"}'), 12);
    assert.equal(sample(text, 'llamad_prompt_cached_tokens_total{model="tiny:latest"}'), 4);
    assert.equal(sample(text, 'llamad_generated_tokens_total{model="tiny:latest"}'), 3);
    assert.equal(sample(text, 'llamad_time_to_first_token_seconds_count{model="tiny:latest"}'), 1);
    assert.equal(sample(text, 'llamad_inter_token_seconds_count{model="tiny:latest"}'), 2);
    assert.equal(sample(text, 'llamad_inter_token_seconds_bucket{model="tiny:latest",le="+Inf"}'), 2);
  });

  it('reads the scheduler gauges at scrape time', async () => {
    const stats: SchedulerStats = {
      queued: 2,
      running: 1,
      runners: [
        {
          model: 'tiny:latest',
          slotsTotal: 4,
          slotsBusy: 1,
          slotsWaiting: 1,
          kvCellsTotal: 8192,
          kvCellsUsed: 40,
          kvUnified: true,
          ramCacheEntries: 2,
          ramCacheBytes: 4096,
          ramCacheHits: 3,
          ramCacheTokens: 300,
          draftTokens: 120,
          draftAccepted: 90,
          waiting: 1,
          running: 1,
        },
      ],
      pendingLoads: [{ model: 'tiny:latest', requests: 1 }],
    };
    const { metrics } = service(stats);
    let text = await metrics.render();
    assert.equal(sample(text, 'llamad_requests_queued'), 2);
    assert.equal(sample(text, 'llamad_requests_running'), 1);
    assert.equal(sample(text, 'llamad_models_loaded'), 1);
    assert.equal(sample(text, 'llamad_kv_cache_cells_used{model="tiny:latest"}'), 40);
    assert.equal(sample(text, 'llamad_kv_cache_cells_total{model="tiny:latest"}'), 8192);
    assert.equal(sample(text, 'llamad_slots_busy{model="tiny:latest"}'), 1);
    assert.equal(sample(text, 'llamad_slots_total{model="tiny:latest"}'), 4);
    assert.equal(sample(text, 'llamad_slots_waiting{model="tiny:latest"}'), 1);
    assert.equal(sample(text, 'llamad_prompt_cache_ram_entries{model="tiny:latest"}'), 2);
    assert.equal(sample(text, 'llamad_prompt_cache_ram_bytes{model="tiny:latest"}'), 4096);
    assert.equal(sample(text, 'llamad_prompt_cache_ram_hits{model="tiny:latest"}'), 3);
    assert.equal(sample(text, 'llamad_prompt_cache_ram_tokens{model="tiny:latest"}'), 300);
    assert.equal(sample(text, 'llamad_draft_tokens_total{model="tiny:latest"}'), 120);
    assert.equal(sample(text, 'llamad_draft_accepted_tokens_total{model="tiny:latest"}'), 90);
    // The inference gateway's gauges (model-server-metrics.ts): waiting = load queue + slot gate/runner queue.
    assert.equal(sample(text, 'vllm:num_requests_waiting{model_name="tiny:latest"}'), 2);
    assert.equal(sample(text, 'vllm:num_requests_running{model_name="tiny:latest"}'), 1);
    assert.equal(sample(text, 'vllm:kv_cache_usage_perc{model_name="tiny:latest"}'), 40 / 8192);
    assert.equal(
      sample(text, 'vllm:cache_config_info{model_name="tiny:latest",block_size="16",num_gpu_blocks="512"}'),
      1,
    );
    stats.runners = [];
    stats.pendingLoads = [];
    stats.queued = 0;
    text = await metrics.render();
    assert.equal(sample(text, 'llamad_models_loaded'), 0);
    assert.equal(sample(text, 'llamad_slots_busy{model="tiny:latest"}'), undefined, 'an unloaded model drops out');
    assert.doesNotMatch(text, /^vllm:[a-z_]+\{/m, 'no vllm series without a model');
  });

  it('keeps a registry per instance and stops feeding once destroyed', async () => {
    const a = service(idle);
    const b = service(idle);
    a.metrics.observeHttp('GET', '/health', 200, 0.001);
    assert.equal(
      sample(await b.metrics.render(), 'llamad_http_requests_total{method="GET",route="/health",status="200"}'),
      undefined,
    );
    a.metrics.onModuleDestroy();
    assert.equal(a.observation.sink, undefined);
    a.hooks.begin('m', 'generate', process.hrtime.bigint()).finish(
      {
        totalDurationNs: 1,
        promptEvalCount: 1,
        promptCachedCount: 0,
        promptEvalDurationNs: 1,
        evalCount: 1,
        evalDurationNs: 1,
      },
      'stop',
    );
    assert.equal(sample(await a.metrics.render(), 'llamad_generated_tokens_total{model="m"}'), undefined);
  });
});

describe('PerTokenHistogram', () => {
  it('renders cumulative buckets, +Inf, sum and count per label value in Prometheus text', async () => {
    const registry = new Registry();
    const h = new PerTokenHistogram('t_seconds', 'Gaps.', 'model', [0.1, 0.01, 1], [registry]);
    const a = h.child('a');
    assert.equal(h.child('a'), a, 'one series per label value');
    for (const v of [0.005, 0.05, 0.5, 5]) a.observe(v);
    const text = await registry.metrics();
    assert.match(text, /# TYPE t_seconds histogram/);
    assert.equal(sample(text, 't_seconds_bucket{model="a",le="0.01"}'), 1);
    assert.equal(sample(text, 't_seconds_bucket{model="a",le="0.1"}'), 2);
    assert.equal(sample(text, 't_seconds_bucket{model="a",le="1"}'), 3);
    assert.equal(sample(text, 't_seconds_bucket{model="a",le="+Inf"}'), 4);
    assert.equal(sample(text, 't_seconds_sum{model="a"}'), 5.555);
    assert.equal(sample(text, 't_seconds_count{model="a"}'), 4);
    h.reset();
    assert.doesNotMatch(await registry.metrics(), /t_seconds_count/);
  });
});
