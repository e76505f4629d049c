import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { MetricsListener, PICKER_METRIC_SPECS } from '../../src/operations';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { checkPickerMetrics } from '../utils/picker-metrics';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

/** A GET with headers fetch would not let a test set (Host), over node:http. */
function httpGet(port: number, path: string, headers: Record<string, string>): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
    });
    req.on('error', reject);
    req.end();
  });
}
const KEY = 'sk-metrics-test';
const auth = { authorization: `Bearer ${KEY}` };

/**
 * The names and labels the GAIE/llm-d endpoint picker's default `vllm` engine configuration reads (llm-d-router
 * pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go and extractor.go; reference/shared-service.md §4),
 * written out here so that renaming one in src/operations/metrics/model-server-metrics.ts fails this test.
 */
const PICKER_VLLM_CONFIG = [
  ['vllm:num_requests_waiting', 'model_name'],
  ['vllm:num_requests_running', 'model_name'],
  ['vllm:kv_cache_usage_perc', 'model_name'],
  ['vllm:cache_config_info', 'block_size,num_gpu_blocks'],
  ['vllm:lora_requests_info', 'max_lora,running_lora_adapters,waiting_lora_adapters'],
];

// Issue 34 item 2: the inference gateway's model-server protocol on a running daemon (real addon, tiny model) with
// API keys, and LLAMAD_METRICS_ADDR's second listener (GET /metrics only, no keys, no Origin).
describe('model-server metrics and the metrics listener', { skip: addon.skip }, () => {
  let t: TestApp;
  let metricsUrl: string;
  let closed = false;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({
      binding: addon.binding,
      config: {
        numParallel: 1,
        contextLength: 8192,
        apiKeys: [KEY],
        allowServerPaths: true,
        metricsAddr: { host: '127.0.0.1', port: 0 },
      },
    });
    const bound = t.app.get(MetricsListener).address();
    assert.ok(bound, 'the metrics listener is bound');
    metricsUrl = `http://127.0.0.1:${bound.port}`;
    const create = await postJson(
      `${t.baseUrl}/api/create`,
      { model: 'tiny', modelfile: `FROM ${TINY_QWEN2}`, stream: false },
      { headers: { 'content-type': 'application/json', ...auth } },
    );
    assert.equal(create.status, 200, await create.text());
    const chat = await postJson(
      `${t.baseUrl}/api/chat`,
      { model: 'tiny', messages: [{ role: 'user', content: 'Hello' }], stream: false, options: { num_predict: 4 } },
      { headers: { 'content-type': 'application/json', ...auth } },
    );
    assert.equal(chat.status, 200, await chat.text());
  });

  after(async () => {
    if (!closed) await t?.close();
  });

  it("exports the picker's metric specs under the names its default vllm configuration reads", () => {
    assert.deepEqual(
      PICKER_METRIC_SPECS.map((s) => s.name),
      PICKER_VLLM_CONFIG.map(([name]) => name),
    );
    for (const [name, labels] of PICKER_VLLM_CONFIG) {
      const spec = PICKER_METRIC_SPECS.find((s) => s.name === name)!;
      for (const label of labels.split(',')) assert.ok(spec.labels.includes(label), `${name} ${label}`);
    }
  });

  it('serves the gauges without a key on the metrics listener, with the picker specs after a request', async () => {
    const res = await fetch(`${metricsUrl}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const { samples } = checkPickerMetrics(text, 'tiny:latest');
    const info = samples.find((s) => s.name === 'vllm:cache_config_info' && s.labels.model_name === 'tiny:latest');
    const cells = samples.find((s) => s.name === 'llamad_kv_cache_cells_total' && s.labels.model === 'tiny:latest');
    assert.ok(info && cells);
    assert.equal(Number(info.labels.block_size) * Number(info.labels.num_gpu_blocks), cells.value);
    const idle = samples.find((s) => s.name === 'vllm:num_requests_running' && s.labels.model_name === 'tiny:latest');
    assert.equal(idle?.value, 0, 'the request is over');
    assert.match(text, /^llamad_http_requests_total\{/m, "the same registry as the main listener's");
  });

  it('keeps the API key on the main listener', async () => {
    assert.equal((await fetch(`${t.baseUrl}/metrics`)).status, 401);
    const res = await fetch(`${t.baseUrl}/metrics`, { headers: auth });
    assert.equal(res.status, 200);
    checkPickerMetrics(await res.text(), 'tiny:latest');
  });

  it('serves nothing else, and refuses a request with an Origin header', async () => {
    for (const path of ['/api/tags', '/', '/v1/models', '/health', '/metrics/x']) {
      assert.equal((await fetch(`${metricsUrl}${path}`)).status, 404, path);
    }
    assert.equal((await fetch(`${metricsUrl}/api/tags`, { headers: auth })).status, 404, 'a key opens nothing');
    assert.equal((await fetch(`${metricsUrl}/metrics`, { method: 'POST', body: '{}' })).status, 405);
    const cross = await fetch(`${metricsUrl}/metrics`, { headers: { origin: 'http://127.0.0.1:1' } });
    assert.equal(cross.status, 403);
    assert.doesNotMatch(await cross.text(), /vllm:/);
    // DNS rebinding: a page served from a name that resolves to 127.0.0.1 sends no Origin on its own origin's GET.
    const port = new URL(metricsUrl).port;
    const rebound = await httpGet(Number(port), '/metrics', { host: `attacker.example:${port}` });
    assert.equal(rebound.status, 403);
    assert.equal((await httpGet(Number(port), '/metrics', { host: `localhost:${port}` })).status, 200);
  });

  it('counts a request waiting for the busy slot as waiting for its model, the one generating as running', async () => {
    const abort = new AbortController();
    // Never ends on its own before the client leaves: sampling at temperature 1 over the whole 8192-cell slot.
    const stream = () =>
      postJson(
        `${t.baseUrl}/api/generate`,
        { model: 'tiny', prompt: 'Count to a million.', options: { num_predict: -1, temperature: 1, seed: 7 } },
        { headers: { 'content-type': 'application/json', ...auth }, signal: abort.signal },
      );
    const first = await stream();
    assert.equal(first.status, 200);
    const reader = first.body!.getReader();
    assert.equal((await reader.read()).done, false, 'a first chunk');
    const second = stream().catch(() => undefined);
    const value = (text: string, name: string) =>
      checkPickerMetrics(text).samples.find((s) => s.name === name && s.labels.model_name === 'tiny:latest')?.value;
    let text = '';
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      text = await (await fetch(`${metricsUrl}/metrics`)).text();
      if (value(text, 'vllm:num_requests_waiting') === 1) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    try {
      assert.equal(value(text, 'vllm:num_requests_waiting'), 1, 'the second waits at the slot gate');
      assert.equal(value(text, 'vllm:num_requests_running'), 1);
      assert.ok((value(text, 'vllm:kv_cache_usage_perc') ?? 0) > 0, 'the first holds KV cells');
    } finally {
      abort.abort();
      await reader.cancel().catch(() => undefined);
      await second;
    }
  });

  it('closes the listener with the application', async () => {
    const listener = t.app.get(MetricsListener);
    closed = true;
    await t.close();
    assert.equal(listener.address(), undefined);
    await assert.rejects(fetch(`${metricsUrl}/metrics`));
  });
});
