import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import {
  loraLabels,
  modelLoads,
  registerModelServerGauges,
} from '../../../../src/operations/metrics/model-server-metrics';
import type { RunnerStats, SchedulerStats } from '../../../../src/scheduler';

/** A loaded runner's stats with the fields these gauges read. */
function runner(model: string, fields: Partial<RunnerStats> = {}): RunnerStats {
  return {
    model,
    slotsTotal: 2,
    slotsBusy: 0,
    slotsWaiting: 0,
    kvCellsTotal: 1024,
    kvCellsUsed: 0,
    kvUnified: false,
    ramCacheEntries: 0,
    ramCacheBytes: 0,
    ramCacheHits: 0,
    ramCacheTokens: 0,
    draftTokens: 0,
    draftAccepted: 0,
    waiting: 0,
    running: 0,
    ...fields,
  };
}

describe('model-server metrics (inference gateway)', () => {
  it("adds the load queue to a model's waiting requests and lists models still loading, in name order", () => {
    const stats: SchedulerStats = {
      queued: 5,
      running: 1,
      runners: [runner('b:latest', { waiting: 2, running: 1, kvCellsUsed: 256 })],
      pendingLoads: [
        { model: 'b:latest', requests: 1 },
        { model: 'a:latest', requests: 2 },
      ],
    };
    const loads = modelLoads(stats);
    assert.deepEqual([...loads.keys()], ['a:latest', 'b:latest']);
    assert.deepEqual(loads.get('a:latest'), { waiting: 2, running: 0, kvUsed: 0, kvTotal: 0, loaded: false });
    assert.deepEqual(loads.get('b:latest'), { waiting: 3, running: 1, kvUsed: 256, kvTotal: 1024, loaded: true });
  });

  it('reports one LoRA series for the daemon: resident adapters as running, waiting ones, summed max', () => {
    assert.equal(loraLabels([]), undefined);
    assert.deepEqual(
      loraLabels([
        runner('x', { loras: { max: 4, resident: ['sql', 'chat'], running: ['sql'], waiting: ['poem'] } }),
        runner('y', { loras: { max: 2, resident: [], running: [], waiting: [] } }),
        runner('embed'),
      ]),
      { max_lora: '6', running_lora_adapters: 'chat,sql', waiting_lora_adapters: 'poem' },
    );
    assert.deepEqual(loraLabels([runner('embed')]), {
      max_lora: '0',
      running_lora_adapters: '',
      waiting_lora_adapters: '',
    });
  });

  it('resets the series at each scrape: a loading model has no KV series, an unloaded one vanishes', async () => {
    const registry = new Registry();
    const stats: SchedulerStats = {
      queued: 1,
      running: 0,
      runners: [runner('m:latest', { kvCellsUsed: 2048, kvCellsTotal: 1000 })],
      pendingLoads: [{ model: 'next:latest', requests: 1 }],
    };
    registerModelServerGauges(
      [registry],
      () => stats,
      () => 1_800_000_000,
    );
    let text = await registry.metrics();
    assert.match(text, /^vllm:num_requests_waiting\{model_name="next:latest"\} 1$/m);
    assert.doesNotMatch(text, /^vllm:kv_cache_usage_perc\{model_name="next:latest"\}/m);
    assert.match(text, /^vllm:kv_cache_usage_perc\{model_name="m:latest"\} 1$/m, 'clamped to 1');
    assert.match(text, /^vllm:cache_config_info\{model_name="m:latest",block_size="16",num_gpu_blocks="62"\} 1$/m);
    assert.match(
      text,
      /^vllm:lora_requests_info\{max_lora="0",running_lora_adapters="",waiting_lora_adapters=""\} 1800000000$/m,
    );
    stats.runners = [];
    stats.pendingLoads = [];
    text = await registry.metrics();
    assert.doesNotMatch(text, /^vllm:[a-z_]+\{/m);
    assert.match(text, /^# TYPE vllm:num_requests_waiting gauge$/m);
  });
});
