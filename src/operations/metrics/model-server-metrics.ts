import { Gauge, Registry } from 'prom-client';
import type { RunnerStats, SchedulerStats } from '../../scheduler';

/*
 * The model-server protocol of the Kubernetes Gateway API Inference Extension (GAIE) and llm-d (issue 34 item 2;
 * reference/shared-service.md §4): the endpoint picker (EPP) scrapes each pod's /metrics for queued and running
 * requests, the KV-cache use as a 0–1 fraction, the cache configuration and LoRA adapters. llamad exports them under
 * vLLM's names and labels, so that the picker's default engine configuration (`vllm`, used for pods without an
 * `llm-d.ai/engine-type` label; llm-d-router pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go) reads
 * llamad unchanged. docs/deploy.md "Behind the inference gateway" explains the choice and the values.
 */

/** One metric the endpoint picker reads: its name, Prometheus type and the labels llamad always gives it. */
export interface PickerMetricSpec {
  name: string;
  type: 'gauge';
  labels: readonly string[];
  /** What the picker does with it (docs). */
  use: string;
}

/** Queued requests per model (the picker's TotalQueuedRequests: queue, load-aware and latency scorers). */
export const NUM_REQUESTS_WAITING = 'vllm:num_requests_waiting';
/** Running requests per model (TotalRunningRequests). */
export const NUM_REQUESTS_RUNNING = 'vllm:num_requests_running';
/** KV cells used / total per model, 0–1 (KVCacheUtilization: the picker scores 1 − value). */
export const KV_CACHE_USAGE_PERC = 'vllm:kv_cache_usage_perc';
/** Info gauge (= 1) with the KV cache's block size and number of blocks as labels (prefix-cache auto-tune). */
export const CACHE_CONFIG_INFO = 'vllm:cache_config_info';
/** LoRA adapters of the pod as labels; the value is the Unix time of the reading (lora-affinity scorer). */
export const LORA_REQUESTS_INFO = 'vllm:lora_requests_info';

/**
 * Tokens per KV "block" reported in `vllm:cache_config_info`. llama.cpp's KV cache is one cell per token and llamad
 * reuses any common prompt prefix token by token, so no block size is native to it; 16 is vLLM's default and the
 * picker's own default (`blockSizeTokens`), so its prefix hashing is the same whether auto-tuned from this or not.
 * `num_gpu_blocks` is the KV cells divided by it (the capacity, in blocks, of the picker's per-pod prefix index).
 */
export const KV_BLOCK_TOKENS = 16;

/** The metrics the endpoint picker's `vllm` engine configuration reads, with the labels llamad gives them. */
export const PICKER_METRIC_SPECS: readonly PickerMetricSpec[] = [
  { name: NUM_REQUESTS_WAITING, type: 'gauge', labels: ['model_name'], use: 'queued requests' },
  { name: NUM_REQUESTS_RUNNING, type: 'gauge', labels: ['model_name'], use: 'running requests' },
  { name: KV_CACHE_USAGE_PERC, type: 'gauge', labels: ['model_name'], use: 'KV-cache use, 0–1' },
  {
    name: CACHE_CONFIG_INFO,
    type: 'gauge',
    labels: ['model_name', 'block_size', 'num_gpu_blocks'],
    use: 'prefix-cache auto-tune (block size in tokens, blocks)',
  },
  {
    name: LORA_REQUESTS_INFO,
    type: 'gauge',
    labels: ['max_lora', 'running_lora_adapters', 'waiting_lora_adapters'],
    use: 'LoRA affinity',
  },
];

/** One model's requests and KV cells, summed over its runners (normally one). */
interface ModelLoad {
  waiting: number;
  running: number;
  kvUsed: number;
  kvTotal: number;
  loaded: boolean;
}

/**
 * The per-model load of one scheduler snapshot, by model name (the runner's name, LoadedRunner.name), in name order:
 * waiting = requests in the load queue for it + at its slot gate + in its runner's queue; running = requests holding
 * its runner and not waiting. Models with requests waiting for their load appear before they are loaded (no KV cells).
 */
export function modelLoads(stats: SchedulerStats): Map<string, ModelLoad> {
  const loads = new Map<string, ModelLoad>();
  const of = (model: string) => {
    let load = loads.get(model);
    if (!load) loads.set(model, (load = { waiting: 0, running: 0, kvUsed: 0, kvTotal: 0, loaded: false }));
    return load;
  };
  for (const p of stats.pendingLoads) of(p.model).waiting += p.requests;
  for (const r of stats.runners) {
    const load = of(r.model);
    load.waiting += r.waiting;
    load.running += r.running;
    load.kvUsed += r.kvCellsUsed;
    load.kvTotal += r.kvCellsTotal;
    load.loaded = true;
  }
  return new Map([...loads].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * The labels of `vllm:lora_requests_info` for the whole daemon (one series, as a vLLM server has; the picker keeps
 * the series with the largest value): `max_lora` the sum of the runners' LLAMAD_MAX_LORAS, `running_lora_adapters`
 * the adapters resident in a runner (applying one costs nothing more, which is what the lora-affinity scorer looks
 * for; those of running generations are among them), `waiting_lora_adapters` those wanted by waiting generations;
 * names sorted and comma-joined. A runner that reports no adapters (an embedding model, a runner without LoRA support)
 * adds nothing, so `max_lora` is 0 when none can take one. Undefined when no model is loaded.
 */
export function loraLabels(
  runners: readonly RunnerStats[],
): { max_lora: string; running_lora_adapters: string; waiting_lora_adapters: string } | undefined {
  if (runners.length === 0) return undefined;
  const resident = new Set<string>();
  const waiting = new Set<string>();
  let max = 0;
  for (const r of runners) {
    const loras = r.loras;
    if (!loras) continue;
    max += loras.max;
    for (const name of [...loras.resident, ...loras.running]) resident.add(name);
    for (const name of loras.waiting) waiting.add(name);
  }
  const join = (names: Set<string>) => [...names].sort().join(',');
  return { max_lora: String(max), running_lora_adapters: join(resident), waiting_lora_adapters: join(waiting) };
}

/**
 * Registers the gauges of {@link PICKER_METRIC_SPECS}, each read at scrape time from `stats` (one scheduler snapshot
 * per scrape) and reset first, so that the series of an unloaded model vanish and label values stay bounded by the
 * models loaded or waiting for a load. `now` gives the Unix time in seconds (tests pass a clock).
 */
export function registerModelServerGauges(
  registers: Registry[],
  stats: () => SchedulerStats,
  now: () => number = () => Date.now() / 1000,
): void {
  const perModel = (name: string, help: string, value: (load: ModelLoad) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames: ['model_name'],
      registers,
      collect() {
        this.reset();
        for (const [model, load] of modelLoads(stats())) {
          const v = value(load);
          if (v !== undefined) this.set({ model_name: model }, v);
        }
      },
    });
  perModel(
    NUM_REQUESTS_WAITING,
    'Requests waiting for the model: for its load, at its slot gate or in its runner queue (vLLM-compatible).',
    (l) => l.waiting,
  );
  perModel(NUM_REQUESTS_RUNNING, 'Requests holding the loaded model and a slot (vLLM-compatible).', (l) => l.running);
  perModel(
    KV_CACHE_USAGE_PERC,
    'KV-cache usage, a fraction: 1 means 100 percent (cells held by generations in flight / cells; vLLM-compatible).',
    (l) => (!l.loaded ? undefined : l.kvTotal > 0 ? Math.min(1, l.kvUsed / l.kvTotal) : 0),
  );
  new Gauge({
    name: CACHE_CONFIG_INFO,
    help: `KV cache configuration of the loaded model (info gauge, always 1): block_size ${KV_BLOCK_TOKENS} tokens, num_gpu_blocks = KV cells / block_size.`,
    labelNames: ['model_name', 'block_size', 'num_gpu_blocks'],
    registers,
    collect() {
      this.reset();
      for (const [model, load] of modelLoads(stats())) {
        if (!load.loaded) continue;
        const blocks = Math.floor(load.kvTotal / KV_BLOCK_TOKENS);
        this.set({ model_name: model, block_size: String(KV_BLOCK_TOKENS), num_gpu_blocks: String(blocks) }, 1);
      }
    },
  });
  new Gauge({
    name: LORA_REQUESTS_INFO,
    help: 'LoRA adapters: the most resident (max_lora), resident (running_lora_adapters) and wanted by waiting requests; value: Unix time of the reading, s.',
    labelNames: ['max_lora', 'running_lora_adapters', 'waiting_lora_adapters'],
    registers,
    collect() {
      this.reset();
      const labels = loraLabels(stats().runners);
      if (labels) this.set(labels, now());
    },
  });
}
