import assert from 'node:assert/strict';
import {
  CACHE_CONFIG_INFO,
  KV_CACHE_USAGE_PERC,
  LORA_REQUESTS_INFO,
  PICKER_METRIC_SPECS,
} from '../../src/operations/metrics/model-server-metrics';

/** One sample of a Prometheus text exposition. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A parsed exposition: `# TYPE` per metric name, and every sample. */
export interface PromExposition {
  types: Map<string, string>;
  samples: PromSample[];
}

/**
 * Parses Prometheus text format 0.0.4: `# TYPE name type` lines and `name{label="value",…} number` samples (label
 * values unescaped: `\\`, `\"`, `\n`). Other comments are skipped.
 * @throws AssertionError on a line that is neither.
 */
export function parseExposition(text: string): PromExposition {
  const types = new Map<string, string>();
  const samples: PromSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      types.set(type[1], type[2]);
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(sample, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    const body = sample[2] ?? '';
    const pair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g;
    let consumed = 0;
    for (let m = pair.exec(body); m; m = pair.exec(body)) {
      labels[m[1]] = m[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      consumed = pair.lastIndex;
    }
    assert.equal(consumed, body.length, `unparsed labels in: ${line}`);
    samples.push({ name: sample[1], labels, value: Number(sample[3]) });
  }
  return { types, samples };
}

/**
 * Checks an exposition against the inference gateway endpoint picker's metric specs (PICKER_METRIC_SPECS, so a
 * rename in src breaks the tests that call this): each name declared `# TYPE <name> gauge`, at least one sample, every
 * sample with the spec's labels; waiting/running counts are non-negative integers, the KV-cache use is in [0, 1],
 * `cache_config_info` is 1 with integer `block_size` > 0 and `num_gpu_blocks` ≥ 0, `lora_requests_info` holds a Unix
 * time within the last `maxAgeS` seconds and an integer `max_lora`.
 * @param model when given, the per-model gauges must have a series with `model_name` = it.
 * @returns the parsed exposition.
 */
export function checkPickerMetrics(text: string, model?: string, maxAgeS = 300): PromExposition {
  const exposition = parseExposition(text);
  const now = Date.now() / 1000;
  for (const spec of PICKER_METRIC_SPECS) {
    assert.equal(exposition.types.get(spec.name), spec.type, `# TYPE ${spec.name} ${spec.type}`);
    const samples = exposition.samples.filter((s) => s.name === spec.name);
    assert.ok(samples.length > 0, `a sample of ${spec.name}`);
    for (const s of samples) {
      for (const label of spec.labels) assert.ok(label in s.labels, `${spec.name} has label ${label}`);
      assert.ok(Number.isFinite(s.value), `${spec.name} is a number`);
      if (spec.name === KV_CACHE_USAGE_PERC) {
        assert.ok(s.value >= 0 && s.value <= 1, `${spec.name} in [0,1]: ${s.value}`);
      } else if (spec.name === CACHE_CONFIG_INFO) {
        assert.equal(s.value, 1);
        assert.match(s.labels.block_size, /^[1-9]\d*$/);
        assert.match(s.labels.num_gpu_blocks, /^\d+$/);
      } else if (spec.name === LORA_REQUESTS_INFO) {
        assert.ok(s.value > now - maxAgeS && s.value < now + 60, `${spec.name} is a recent Unix time: ${s.value}`);
        assert.match(s.labels.max_lora, /^\d+$/);
      } else {
        assert.ok(Number.isInteger(s.value) && s.value >= 0, `${spec.name} is a count: ${s.value}`);
      }
    }
    if (model !== undefined && spec.labels.includes('model_name')) {
      assert.ok(
        samples.some((s) => s.labels.model_name === model),
        `${spec.name}{model_name="${model}"} in ${JSON.stringify(samples)}`,
      );
    }
  }
  return exposition;
}
