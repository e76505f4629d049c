import assert from 'node:assert/strict';
import { context, trace } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  InMemorySpanExporter,
  NodeTracerProvider,
  ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { after, afterEach, describe, it } from 'node:test';
import {
  GenerationHooksRegistry,
  RequestContext,
  requestContextStorage,
  tracerProviderRegistered,
} from '../../../../src/observability';

/** Registers a provider that keeps every ended span in memory (the test's "collector"). */
function register(sampler?: AlwaysOffSampler): { exporter: InMemorySpanExporter; provider: NodeTracerProvider } {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
    ...(sampler ? { sampler } : {}),
  });
  provider.register();
  return { exporter, provider };
}

function named(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  assert.equal(found.length, 1, `${name} in ${spans.map((s) => s.name).join(', ')}`);
  return found[0];
}

const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const ns = (t: [number, number]) => BigInt(t[0]) * 1_000_000_000n + BigInt(t[1]);

const COUNTS = {
  totalDurationNs: 9e6,
  promptEvalCount: 12,
  promptCachedCount: 4,
  promptEvalDurationNs: 1e6,
  evalCount: 3,
  evalDurationNs: 2e6,
};
const SAMPLING = { maxTokens: 3, temperature: 0.7, topP: 0.95, topK: 40, seed: 7 };

describe('generation spans (GenerationTracker.trace)', () => {
  afterEach(() => trace.disable());
  after(() => trace.disable());

  it('without a tracer provider nothing is traced', () => {
    assert.equal(tracerProviderRegistered(), false);
    const tracker = new GenerationHooksRegistry().begin('m:latest', 'chat', process.hrtime.bigint());
    assert.equal(tracker.trace, undefined);
  });

  it('in-process: the inference span with queue, load, prompt, slot wait and the runner side in order', async () => {
    const { exporter, provider } = register();
    assert.equal(tracerProviderRegistered(), true);
    const request = new RequestContext('req-1', 'POST', '/api/chat');
    request.principalName = 'team-a';
    request.stream = true;
    const parent = trace.getTracer('test').startSpan('POST /api/chat');
    request.trace = trace.setSpan(context.active(), parent);
    const startedAt = process.hrtime.bigint();
    const tracker = requestContextStorage.run(request, () =>
      new GenerationHooksRegistry().begin('m:latest', 'chat', startedAt),
    );
    const t = tracker.trace;
    assert.ok(t);
    const now = performance.now();
    t.acquired(5e6, [now - 3, now - 1]); // waited 5 ms; a load from 3 ms to 1 ms ago
    await new Promise((r) => setTimeout(r, 2));
    t.promptReady();
    tracker.prompt(12);
    const traceparent = t.generating(12, SAMPLING);
    assert.match(traceparent, new RegExp(`^00-${parent.spanContext().traceId}-[0-9a-f]{16}-01$`));
    tracker.token();
    tracker.token();
    tracker.finish(COUNTS, 'length');
    parent.end();
    await provider.forceFlush();
    const spans = exporter.getFinishedSpans();
    const gen = named(spans, 'chat m:latest');
    assert.equal(parentOf(gen), parent.spanContext().spanId);
    assert.equal(traceparent.split('-')[2], gen.spanContext().spanId, 'the runner side goes under the inference span');
    const [queue, load, prompt, slot, runner] = [
      'llamad.queue',
      'llamad.model.load',
      'llamad.prompt',
      'llamad.slot_wait',
      'llamad.runner.generate',
    ].map((n) => named(spans, n));
    for (const s of [queue, load, prompt, slot, runner]) assert.equal(parentOf(s), gen.spanContext().spanId, s.name);
    const evalSpan = named(spans, 'llamad.prompt_eval');
    const decode = named(spans, 'llamad.decode');
    for (const s of [evalSpan, decode]) assert.equal(parentOf(s), runner.spanContext().spanId, s.name);
    const order = [queue, load, prompt, slot, runner, evalSpan, decode];
    for (let i = 1; i < order.length; i++) {
      assert.ok(ns(order[i].startTime) >= ns(order[i - 1].startTime), `${order[i].name} after ${order[i - 1].name}`);
    }
    assert.ok(ns(load.endTime) - ns(load.startTime) >= 1_500_000n, 'the load lasted its 2 ms');
    assert.equal(runner.attributes['llamad.runner.pid'], process.pid);
    assert.equal(runner.attributes['llamad.runner.kind'], 'inprocess');
    assert.deepEqual(
      decode.events.map((e) => e.name),
      ['gen_ai.first_token'],
    );
    assert.deepEqual(gen.attributes, {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'llamad',
      'gen_ai.request.model': 'm:latest',
      'gen_ai.request.stream': true,
      'llamad.request_id': 'req-1',
      'llamad.principal': 'team-a',
      'llamad.prompt.tokens': 12,
      'gen_ai.request.max_tokens': 3,
      'gen_ai.request.temperature': 0.7,
      'gen_ai.request.top_p': 0.95,
      'gen_ai.request.top_k': 40,
      'gen_ai.request.seed': 7,
      'gen_ai.usage.input_tokens': 12,
      'gen_ai.usage.output_tokens': 3,
      'gen_ai.usage.cache_read.input_tokens': 4,
      'llamad.usage.cached_tokens': 4,
      'llamad.usage.prompt_eval_tokens': 8,
      'gen_ai.response.model': 'm:latest',
      'gen_ai.response.time_to_first_chunk': gen.attributes['gen_ai.response.time_to_first_chunk'],
      'gen_ai.response.finish_reasons': ['length'],
    });
    assert.ok(Number(gen.attributes['gen_ai.response.time_to_first_chunk']) > 0);
  });

  it("a runner process's report: its times and pid, under the span its echoed traceparent names", async () => {
    const { exporter, provider } = register();
    const tracker = new GenerationHooksRegistry().begin('m:latest', 'generate', process.hrtime.bigint());
    const t = tracker.trace!;
    t.acquired(1e6);
    t.promptReady();
    const traceparent = t.generating(5, { ...SAMPLING, maxTokens: -1 });
    const receivedAt = performance.timeOrigin + performance.now();
    t.runnerReport({ traceparent, pid: 4242, receivedAt, firstTokenAt: receivedAt + 5, endedAt: receivedAt + 9 });
    tracker.finish(COUNTS, 'stop');
    await provider.forceFlush();
    const spans = exporter.getFinishedSpans();
    const gen = named(spans, 'text_completion m:latest');
    assert.equal(gen.attributes['gen_ai.request.max_tokens'], undefined, 'unbounded is not recorded');
    assert.equal(gen.attributes['gen_ai.request.stream'], undefined);
    assert.ok(!spans.some((s) => s.name === 'llamad.model.load'), 'no load in this wait');
    const runner = named(spans, 'llamad.runner.generate');
    assert.equal(parentOf(runner), gen.spanContext().spanId);
    assert.equal(runner.spanContext().traceId, gen.spanContext().traceId);
    assert.equal(runner.attributes['llamad.runner.pid'], 4242);
    assert.equal(runner.attributes['llamad.runner.kind'], 'process');
    const decode = named(spans, 'llamad.decode');
    assert.equal(ns(decode.endTime) - ns(decode.startTime), 4_000_000n);
    const evalSpan = named(spans, 'llamad.prompt_eval');
    assert.equal(ns(evalSpan.endTime) - ns(evalSpan.startTime), 5_000_000n);
  });

  it('a failure is an error status, a cancellation is not; an untouched generation has no phase spans', async () => {
    const { exporter, provider } = register();
    const registry = new GenerationHooksRegistry();
    registry.begin('m:latest', 'chat', process.hrtime.bigint()).fail(new Error('boom'));
    registry.begin('e:latest', 'embed', process.hrtime.bigint()).cancel();
    await provider.forceFlush();
    const spans = exporter.getFinishedSpans();
    assert.deepEqual(spans.map((s) => s.name).sort(), ['chat m:latest', 'embeddings e:latest']);
    const failed = named(spans, 'chat m:latest');
    assert.equal(failed.status.code, 2);
    assert.equal(failed.status.message, 'boom');
    assert.equal(failed.attributes['error.type'], '_OTHER');
    const cancelled = named(spans, 'embeddings e:latest');
    assert.equal(cancelled.status.code, 0);
    assert.equal(cancelled.attributes['llamad.cancelled'], true);
  });

  it('a generation that fails after it was submitted, without a runner report: its runner side has no kind nor pid', async () => {
    const { exporter, provider } = register();
    const tracker = new GenerationHooksRegistry().begin('m:latest', 'chat', process.hrtime.bigint());
    tracker.trace!.acquired(1e6);
    tracker.trace!.promptReady();
    tracker.trace!.generating(5, SAMPLING);
    tracker.fail(new Error('llama runner process has terminated: signal: killed'));
    await provider.forceFlush();
    const runner = named(exporter.getFinishedSpans(), 'llamad.runner.generate');
    assert.deepEqual(runner.attributes, {});
    assert.equal(named(exporter.getFinishedSpans(), 'chat m:latest').status.code, 2);
  });

  it('a span the sampler drops: no trace object, nothing recorded', async () => {
    const { exporter, provider } = register(new AlwaysOffSampler());
    const tracker = new GenerationHooksRegistry().begin('m:latest', 'chat', process.hrtime.bigint());
    assert.equal(tracker.trace, undefined);
    tracker.token();
    tracker.finish(COUNTS, 'stop');
    await provider.forceFlush();
    assert.equal(exporter.getFinishedSpans().length, 0);
  });
});
