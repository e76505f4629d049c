// Issue 36 item 1: OpenTelemetry traces of the real daemon (`node dist/src/main.js`, tiny-qwen2 in a runner process,
// the default runner) exported with OTLP http/json to an in-process receiver (test/utils/otlp-receiver.ts): one
// /v1/chat/completions with a `traceparent` is one trace — the HTTP server span under the caller's span, the GenAI
// inference span, the queue, load, prompt, slot-wait and runner-side spans in order and correctly parented (the runner
// side carries the runner process's pid) — with the GenAI attributes and no prompt or reply text; with
// OTEL_TRACES_SAMPLER=always_off nothing is exported; without OTEL_* variables the daemon never talks OTLP.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DaemonProcess, spawnDaemon } from '../utils/daemon-process';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { OtlpReceiver, ReceivedSpan } from '../utils/otlp-receiver';
import { realAddon } from '../utils/real-addon';

const addon = realAddon();
const SECRET = 'PURPLE-ELEPHANT-4711';
/**
 * Slack when comparing times of the daemon with times of the runner process (each converts its monotonic clock to
 * epoch time from its own start; both read the same system clock): 2 ms.
 */
const CLOCKS_NS = 2_000_000n;

/** The daemon with OTLP http/json to `receiver` (quick batches) and model `t` created. */
async function startTraced(store: string, receiver: OtlpReceiver, env: Record<string, string> = {}) {
  const daemon = await spawnDaemon(store, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.base,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    ...env,
  });
  const created = await fetch(`${daemon.base}/api/create`, {
    method: 'POST',
    body: JSON.stringify({ model: 't', modelfile: `FROM ${TINY_QWEN2}\n`, stream: false }),
  });
  assert.equal(created.status, 200);
  return daemon;
}

/** A W3C traceparent of a new sampled trace: [header, trace id, parent span id]. */
function newTraceparent(): [string, string, string] {
  const traceId = randomBytes(16).toString('hex');
  const parent = randomBytes(8).toString('hex');
  return [`00-${traceId}-${parent}-01`, traceId, parent];
}

/** A streamed /v1/chat/completions with that traceparent; resolves with the whole body once it ended. */
async function chat(base: string, traceparent: string): Promise<string> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent },
    body: JSON.stringify({
      model: 't',
      messages: [{ role: 'user', content: `Repeat after me: ${SECRET}` }],
      max_tokens: 6,
      temperature: 0.5,
      top_p: 0.9,
      seed: 42,
      stream: true,
    }),
  });
  assert.equal(res.status, 200);
  return res.text();
}

function byName(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((s) => s.name === name);
  assert.equal(found.length, 1, `one ${name} span: ${spans.map((s) => s.name).join(', ')}`);
  return found[0];
}

describe('traces of the real daemon (OTLP http/json)', { skip: addon.skip }, () => {
  const store = mkdtempSync(join(tmpdir(), 'llamad-tracing-'));
  const receiver = new OtlpReceiver();
  let daemon: DaemonProcess | undefined;
  before(async () => {
    ensureTestModels();
    await receiver.start();
  });
  after(async () => {
    await daemon?.kill();
    await receiver.stop();
    rmSync(store, { recursive: true, force: true });
  });

  it(
    'one chat completion with a traceparent is one trace: every stage in order, parented across the runner process',
    { timeout: 120_000 },
    async () => {
      daemon = await startTraced(store, receiver);
      const [traceparent, traceId, callerSpan] = newTraceparent();
      const body = await chat(daemon.base, traceparent);
      assert.ok(body.includes('[DONE]'), body);
      const spans = await receiver.waitFor(traceId, (s) =>
        ['POST /v1/chat/completions', 'chat t:latest', 'llamad.decode'].every((n) => s.some((x) => x.name === n)),
      );
      const http = byName(spans, 'POST /v1/chat/completions');
      assert.equal(http.parentSpanId, callerSpan, "the HTTP span is the caller's child");
      assert.equal(http.kind, 2, 'SERVER');
      assert.equal(http.attributes['http.route'], '/v1/chat/completions');
      assert.equal(http.attributes['http.response.status_code'], 200);
      assert.equal(http.resource['service.name'], 'llamad');

      const gen = byName(spans, 'chat t:latest');
      assert.equal(gen.parentSpanId, http.spanId);
      const queue = byName(spans, 'llamad.queue');
      const load = byName(spans, 'llamad.model.load');
      const prompt = byName(spans, 'llamad.prompt');
      const slot = byName(spans, 'llamad.slot_wait');
      const runner = byName(spans, 'llamad.runner.generate');
      const evalSpan = byName(spans, 'llamad.prompt_eval');
      const decode = byName(spans, 'llamad.decode');
      for (const s of [queue, load, prompt, slot, runner]) assert.equal(s.parentSpanId, gen.spanId, s.name);
      for (const s of [evalSpan, decode]) assert.equal(s.parentSpanId, runner.spanId, s.name);
      // In order, none before its predecessor started, every one inside the HTTP span.
      const ordered = [http, gen, queue, load, prompt, slot, runner, evalSpan, decode];
      for (let i = 1; i < ordered.length; i++) {
        assert.ok(
          ordered[i].startNs >= ordered[i - 1].startNs - CLOCKS_NS,
          `${ordered[i].name} starts after ${ordered[i - 1].name}`,
        );
      }
      for (const [a, b] of [
        [queue, load],
        [load, prompt],
        [prompt, slot],
        [slot, runner],
        [evalSpan, decode],
      ]) {
        assert.ok(b.startNs >= a.endNs - CLOCKS_NS, `${b.name} starts after ${a.name} ended`);
      }
      for (const s of spans) {
        assert.ok(s.endNs >= s.startNs, s.name);
        if (s !== http) assert.ok(s.endNs <= http.endNs + CLOCKS_NS, `${s.name} ends within the request`);
      }
      // The runner's side ran in the runner process, not the daemon.
      const pid = runner.attributes['llamad.runner.pid'];
      assert.equal(typeof pid, 'number');
      assert.notEqual(pid, daemon.child.pid);
      assert.equal(runner.attributes['llamad.runner.kind'], 'process');
      // The engine's slot that ran it (one request on an idle runner: a slot of its numParallel).
      const slotId = gen.attributes['llamad.slot'];
      assert.equal(typeof slotId, 'number');
      assert.ok((slotId as number) >= 0);
      assert.deepEqual(
        decode.events.map((e) => e.name),
        ['gen_ai.first_token'],
      );

      const a = gen.attributes;
      assert.equal(gen.kind, 1, 'INTERNAL');
      assert.equal(a['gen_ai.operation.name'], 'chat');
      assert.equal(a['gen_ai.provider.name'], 'llamad');
      assert.equal(a['gen_ai.request.model'], 't:latest');
      assert.equal(a['gen_ai.response.model'], 't:latest');
      assert.equal(a['gen_ai.request.max_tokens'], 6);
      assert.equal(a['gen_ai.request.temperature'], 0.5);
      assert.ok(Math.abs(Number(a['gen_ai.request.top_p']) - 0.9) < 1e-6);
      assert.equal(a['gen_ai.request.seed'], 42);
      assert.equal(a['gen_ai.request.stream'], true);
      assert.ok(Number(a['gen_ai.usage.input_tokens']) > 0);
      const output = Number(a['gen_ai.usage.output_tokens']);
      assert.ok(output > 0 && output <= 6, String(output));
      assert.equal(a['gen_ai.usage.cache_read.input_tokens'], 0);
      assert.ok(['stop', 'length'].includes(String((a['gen_ai.response.finish_reasons'] as string[])[0])));
      assert.ok(Number(a['gen_ai.response.time_to_first_chunk']) > 0);
      assert.equal(typeof a['llamad.request_id'], 'string');

      // No prompt or reply text by default, anywhere in what was exported.
      assert.ok(!receiver.bodies.some((b) => b.includes(SECRET)), 'the prompt text is not exported');
      assert.ok(!receiver.bodies.some((b) => b.includes('gen_ai.input.messages')));
    },
  );

  it(
    'a second request on the loaded model has no load span, and its prompt prefix is read from the cache',
    { timeout: 60_000 },
    async () => {
      assert.ok(daemon);
      const [traceparent, traceId] = newTraceparent();
      await chat(daemon.base, traceparent);
      const spans = await receiver.waitFor(traceId, (s) => s.some((x) => x.name === 'POST /v1/chat/completions'));
      assert.ok(spans.some((s) => s.name === 'llamad.queue'));
      assert.ok(!spans.some((s) => s.name === 'llamad.model.load'), spans.map((s) => s.name).join(', '));
      const gen = byName(spans, 'chat t:latest');
      assert.ok(Number(gen.attributes['gen_ai.usage.cache_read.input_tokens']) > 0, 'the same prompt again: cached');
    },
  );
});

describe('traces at shutdown, and off', { skip: addon.skip }, () => {
  const store = mkdtempSync(join(tmpdir(), 'llamad-tracing-off-'));
  const receiver = new OtlpReceiver();
  before(async () => {
    ensureTestModels();
    await receiver.start();
  });
  after(async () => {
    await receiver.stop();
    rmSync(store, { recursive: true, force: true });
  });

  it('SIGTERM flushes the spans still buffered before the process exits', { timeout: 120_000 }, async () => {
    const daemon = await startTraced(store, receiver, { OTEL_BSP_SCHEDULE_DELAY: '600000' });
    try {
      const [traceparent, traceId] = newTraceparent();
      await chat(daemon.base, traceparent);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(receiver.trace(traceId).length, 0, 'nothing exported yet (a 10 min batch delay)');
      daemon.child.kill('SIGTERM');
      assert.deepEqual(await daemon.exited, { code: 0, signal: null });
      const names = receiver.trace(traceId).map((x) => x.name);
      for (const name of ['POST /v1/chat/completions', 'chat t:latest', 'llamad.decode']) {
        assert.ok(names.includes(name), `${name} in ${names.join(', ')}`);
      }
    } finally {
      await daemon.kill();
    }
    receiver.spans.length = 0;
  });

  it(
    'OTEL_TRACES_SAMPLER=always_off: no span is exported, even for a sampled traceparent',
    { timeout: 120_000 },
    async () => {
      const daemon = await startTraced(store, receiver, { OTEL_TRACES_SAMPLER: 'always_off' });
      try {
        const [traceparent] = newTraceparent();
        await chat(daemon.base, traceparent);
        // A graceful stop flushes the batch processor: whatever was recorded would be exported by now.
        daemon.child.kill('SIGTERM');
        assert.deepEqual(await daemon.exited, { code: 0, signal: null });
        assert.equal(receiver.spans.length, 0, receiver.spans.map((s) => s.name).join(', '));
      } finally {
        await daemon.kill();
      }
    },
  );
});

describe('traces with the content opt-in, in-process runner', { skip: addon.skip }, () => {
  const store = mkdtempSync(join(tmpdir(), 'llamad-tracing-content-'));
  const receiver = new OtlpReceiver();
  before(async () => {
    ensureTestModels();
    await receiver.start();
  });
  after(async () => {
    await receiver.stop();
    rmSync(store, { recursive: true, force: true });
  });

  it(
    'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true records the messages; LLAMAD_RUNNER=inprocess runs the runner side in the daemon',
    { timeout: 120_000 },
    async () => {
      const daemon = await startTraced(store, receiver, {
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
        LLAMAD_RUNNER: 'inprocess',
        OTEL_SERVICE_NAME: 'llamad-test',
      });
      try {
        const [traceparent, traceId] = newTraceparent();
        const body = await chat(daemon.base, traceparent);
        const spans = await receiver.waitFor(traceId, (s) =>
          ['POST /v1/chat/completions', 'llamad.decode'].every((n) => s.some((x) => x.name === n)),
        );
        const gen = byName(spans, 'chat t:latest');
        assert.equal(gen.resource['service.name'], 'llamad-test');
        const input = JSON.parse(String(gen.attributes['gen_ai.input.messages'])) as unknown;
        assert.deepEqual(input, [{ role: 'user', parts: [{ type: 'text', content: `Repeat after me: ${SECRET}` }] }]);
        const output = JSON.parse(String(gen.attributes['gen_ai.output.messages'])) as Array<{
          role: string;
          parts: Array<{ content: string }>;
        }>;
        assert.equal(output[0].role, 'assistant');
        // The reply's text is what the stream carried.
        const streamed = body
          .split('\n')
          .filter((l) => l.startsWith('data: {'))
          .map(
            (l) =>
              (JSON.parse(l.slice(6)) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta
                .content ?? '',
          )
          .join('');
        assert.equal(output[0].parts[0].content, streamed);
        const runner = byName(spans, 'llamad.runner.generate');
        assert.equal(runner.attributes['llamad.runner.kind'], 'inprocess');
        assert.equal(runner.attributes['llamad.runner.pid'], daemon.child.pid);
        assert.equal(runner.parentSpanId, gen.spanId);
      } finally {
        await daemon.kill();
      }
    },
  );
});
