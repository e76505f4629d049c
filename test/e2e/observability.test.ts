import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeBinding } from '../utils/fake-binding';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { createModel, postJson, readNdjson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

/** Every sample of a Prometheus text exposition, by series (`name{labels}`). */
function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

/** The sum of the samples whose series starts with `prefix` (0 when none). */
function total(samples: Map<string, number>, prefix: string): number {
  let sum = 0;
  for (const [series, value] of samples) if (series.startsWith(prefix)) sum += value;
  return sum;
}

async function scrape(baseUrl: string, headers: Record<string, string> = {}): Promise<Map<string, number>> {
  const res = await fetch(`${baseUrl}/metrics`, { headers });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseMetrics(await res.text());
}

/** A log destination that keeps every line. */
function capture() {
  const lines: string[] = [];
  return {
    lines,
    destination: { write: (line: string) => void lines.push(line) },
    records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

// GET /metrics, /health, /ready and the per-request log lines against the REAL addon with a generated model
// (issue 13: metrics move with a chat request; log lines are JSON and carry the x-request-id sent).
describe('observability with the real addon', { skip: addon.skip }, () => {
  let t: TestApp;
  const logs = capture();

  before(async () => {
    ensureTestModels();
    t = await createTestApp({
      binding: addon.binding,
      config: { numParallel: 1, contextLength: 512, logLevel: 'debug' },
      logDestination: logs.destination,
    });
    await createModel(t.baseUrl, 'tiny', `FROM ${TINY_QWEN2}`);
  });

  after(() => t?.close());

  it('a chat request moves the request, token, latency and scheduler series', async () => {
    const before = await scrape(t.baseUrl);
    const chat = await postJson(`${t.baseUrl}/api/chat`, {
      model: 'tiny',
      messages: [{ role: 'user', content: 'Hello there' }],
      options: { num_predict: 6, temperature: 0 },
    });
    assert.equal(chat.status, 200);
    const chunks = await readNdjson<{ done: boolean; prompt_eval_count?: number; eval_count?: number }>(chat);
    const done = chunks.at(-1)!;
    assert.equal(done.done, true);
    const after = await scrape(t.baseUrl);

    const requests = 'llamad_http_requests_total{method="POST",route="/api/chat",status="200"}';
    assert.equal((after.get(requests) ?? 0) - (before.get(requests) ?? 0), 1);
    const durationCount = 'llamad_http_request_duration_seconds_count{method="POST",route="/api/chat",status="200"}';
    assert.equal((after.get(durationCount) ?? 0) - (before.get(durationCount) ?? 0), 1);
    const model = '{model="tiny:latest"}';
    const delta = (name: string) => (after.get(`${name}${model}`) ?? 0) - (before.get(`${name}${model}`) ?? 0);
    assert.equal(delta('llamad_prompt_tokens_total'), done.prompt_eval_count);
    assert.equal(delta('llamad_generated_tokens_total'), done.eval_count);
    assert.ok(after.has(`llamad_prompt_cached_tokens_total${model}`));
    assert.equal(delta('llamad_time_to_first_token_seconds_count'), 1);
    assert.ok(delta('llamad_time_to_first_token_seconds_sum') > 0);
    assert.equal(delta('llamad_inter_token_seconds_count'), (done.eval_count ?? 0) - 1);
    assert.equal(after.get('llamad_models_loaded'), 1);
    assert.equal(after.get('llamad_requests_running'), 0);
    assert.equal(after.get('llamad_requests_queued'), 0);
    assert.equal(after.get(`llamad_kv_cache_cells_total${model}`), 512);
    assert.equal(after.get(`llamad_kv_cache_cells_used${model}`), 0);
    assert.equal(after.get(`llamad_slots_busy${model}`), 0);
    assert.ok(total(after, 'process_cpu_user_seconds_total') > 0, 'default process collectors');
    // Route patterns, never raw URLs: an unknown path is `unmatched`.
    await fetch(`${t.baseUrl}/no/such/path`);
    const last = await scrape(t.baseUrl);
    assert.equal(last.get('llamad_http_requests_total{method="GET",route="unmatched",status="404"}'), 1);
    assert.ok(![...last.keys()].some((k) => k.includes('/no/such/path')));
  });

  it('logs one JSON line per request with the x-request-id it echoes, the route, status, model and tokens', async () => {
    const res = await postJson(
      `${t.baseUrl}/api/chat`,
      {
        model: 'tiny',
        messages: [{ role: 'user', content: 'A secret prompt' }],
        stream: false,
        options: { num_predict: 3 },
      },
      { headers: { 'x-request-id': 'e2e-request-42', authorization: 'Bearer sk-not-logged-123' } },
    );
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-request-id'), 'e2e-request-42');
    const body = (await res.json()) as { message: { content: string }; eval_count: number; prompt_eval_count: number };
    const generated = await fetch(`${t.baseUrl}/health`);
    const echoed = generated.headers.get('x-request-id') ?? '';
    assert.match(echoed, /^[0-9a-f-]{36}$/, 'a generated id when none is sent');
    await new Promise((r) => setTimeout(r, 50));

    const records = logs.records(); // every line parses as JSON
    const line = records.find((r) => r.reqId === 'e2e-request-42' && r.msg === 'request completed');
    assert.ok(line, logs.lines.join(''));
    assert.equal(line.method, 'POST');
    assert.equal(line.route, '/api/chat');
    assert.equal(line.status, 200);
    assert.equal(typeof line.durationMs, 'number');
    assert.equal(line.model, 'tiny:latest');
    assert.equal(line.promptTokens, body.prompt_eval_count);
    assert.equal(line.completionTokens, body.eval_count);
    assert.equal(typeof line.time, 'string');
    // Debug level carries the headers, credentials redacted; prompts and outputs are never logged.
    assert.equal((line.headers as Record<string, string>).authorization, '[redacted]');
    const all = logs.lines.join('');
    assert.ok(!all.includes('sk-not-logged-123'), 'the API key is redacted');
    assert.ok(!all.includes('A secret prompt'), 'the prompt is not logged');
    if (body.message.content.length > 3) assert.ok(!all.includes(body.message.content), 'the output is not logged');
    assert.ok(records.some((r) => r.reqId === echoed && r.route === '/health'));
    // Lines written while a request is handled (here: the model load, by Nest's logger) carry its id too.
    assert.ok(records.some((r) => typeof r.context === 'string' && typeof r.reqId === 'string'));
  });

  it('GET /health and GET /ready answer 200 (HEAD too)', async () => {
    const health = await fetch(`${t.baseUrl}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
    const ready = await fetch(`${t.baseUrl}/ready`);
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), { status: 'ok' });
    assert.equal((await fetch(`${t.baseUrl}/health`, { method: 'HEAD' })).status, 200);
  });
});

// The access rules of the operational routes, and readiness failures (no model needed).
describe('observability routes: access and readiness', () => {
  let t: TestApp;
  let broken: TestApp;

  before(async () => {
    t = await createTestApp({ binding: new FakeBinding(), config: { apiKeys: ['k1'] } });
    const file = join(t.modelsDir, 'not-a-directory');
    writeFileSync(file, '');
    broken = await createTestApp({ binding: new FakeBinding(), config: { modelsDir: join(file, 'models') } });
  });

  after(async () => {
    await broken?.close();
    await t?.close();
  });

  it('/metrics needs the API key; /health and /ready are public', async () => {
    assert.equal((await fetch(`${t.baseUrl}/metrics`)).status, 401);
    await scrape(t.baseUrl, { authorization: 'Bearer k1' });
    assert.equal((await fetch(`${t.baseUrl}/health`)).status, 200);
    assert.equal((await fetch(`${t.baseUrl}/ready`)).status, 200);
  });

  it('the probes are behind the Origin/Host gate', async () => {
    const res = await fetch(`${t.baseUrl}/health`, { headers: { origin: 'https://evil.example' } });
    assert.equal(res.status, 403);
    const samples = await scrape(t.baseUrl, { authorization: 'Bearer k1' });
    assert.equal(samples.get('llamad_http_requests_total{method="GET",route="/health",status="403"}'), 1);
  });

  it('/ready is 503 with the reason (and no server path) when the model store cannot be used', async () => {
    const res = await fetch(`${broken.baseUrl}/ready`);
    assert.equal(res.status, 503);
    const body = (await res.json()) as { status: string; error: string };
    assert.equal(body.status, 'unavailable');
    assert.match(body.error, /^model store: /);
    assert.ok(!body.error.includes('/'), body.error);
    assert.equal((await fetch(`${broken.baseUrl}/health`)).status, 200);
  });
});
