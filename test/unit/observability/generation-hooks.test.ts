import assert from 'node:assert/strict';
import { Logger } from '@nestjs/common';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { lastValueFrom, take, tap, toArray } from 'rxjs';
import { ChatCommand } from '../../../src/generation/generation.types';
import {
  GenerationEndInfo,
  GenerationHooksRegistry,
  GenerationInfo,
  RequestContext,
  requestContextStorage,
} from '../../../src/observability';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

/** Records every hook call in order. */
function recorder(registry: GenerationHooksRegistry) {
  const calls: Array<
    | { hook: 'start'; info: GenerationInfo }
    | { hook: 'first'; info: GenerationInfo & { timeToFirstTokenMs: number } }
    | { hook: 'end'; info: GenerationEndInfo }
  > = [];
  const unregister = registry.register({
    onGenerationStart: (info) => calls.push({ hook: 'start', info }),
    onFirstToken: (info) => calls.push({ hook: 'first', info }),
    onGenerationEnd: (info) => calls.push({ hook: 'end', info }),
  });
  return { calls, unregister };
}

describe('GenerationHooksRegistry', () => {
  beforeEach(() => Logger.overrideLogger(false));

  it('calls hooks in order start → first token → end, once each, and forwards inter-token gaps', () => {
    const registry = new GenerationHooksRegistry();
    const { calls } = recorder(registry);
    const gaps: Array<[string, number]> = [];
    registry.registerInterTokenObserver((model) => ({ observe: (s) => gaps.push([model, s]) }));
    const tracker = registry.begin('m:latest', 'chat', process.hrtime.bigint());
    tracker.prompt(7);
    tracker.token();
    tracker.token();
    tracker.token();
    const counts = {
      totalDurationNs: 10,
      promptEvalCount: 7,
      promptCachedCount: 3,
      promptEvalDurationNs: 4,
      evalCount: 3,
      evalDurationNs: 5,
    };
    tracker.finish(counts, 'stop');
    tracker.fail(new Error('late'));
    tracker.cancel();
    assert.deepEqual(
      calls.map((c) => c.hook),
      ['start', 'first', 'end'],
    );
    const start = calls[0].info;
    assert.equal(start.model, 'm:latest');
    assert.equal(start.kind, 'chat');
    assert.equal(start.requestId, undefined);
    assert.ok(Math.abs(start.startedAt - Date.now()) < 1000);
    const end = calls[2].info as GenerationEndInfo;
    assert.equal(end.promptTokens, 7);
    assert.equal(end.cachedTokens, 3);
    assert.equal(end.completionTokens, 3);
    assert.equal(end.totalDurationNs, 10);
    assert.equal(end.doneReason, 'stop');
    assert.equal(end.error, undefined);
    assert.ok((end.timeToFirstTokenMs ?? -1) >= 0);
    assert.equal(gaps.length, 2, 'one gap per token after the first');
    assert.ok(gaps.every(([model, s]) => model === 'm:latest' && s >= 0));
  });

  it('reports a cancelled generation with the counts so far', () => {
    const registry = new GenerationHooksRegistry();
    const { calls } = recorder(registry);
    const tracker = registry.begin('m', 'generate', process.hrtime.bigint());
    tracker.prompt(5);
    tracker.token();
    tracker.cancel();
    const end = calls.at(-1)!.info as GenerationEndInfo;
    assert.equal(end.error, 'cancelled');
    assert.equal(end.promptTokens, 5);
    assert.equal(end.completionTokens, 1);
    assert.equal(end.doneReason, undefined);
  });

  it('takes the request id from the current request context and adds the generation to it', () => {
    const registry = new GenerationHooksRegistry();
    const { calls } = recorder(registry);
    const context = new RequestContext('req-1', 'POST', '/api/chat');
    requestContextStorage.run(context, () => {
      const tracker = registry.begin('m', 'generate', process.hrtime.bigint());
      tracker.token();
      tracker.fail(new Error('boom'));
    });
    assert.equal(calls[0].info.requestId, 'req-1');
    assert.deepEqual(
      { ...context.generation, timeToFirstTokenMs: undefined },
      {
        model: 'm',
        generations: 1,
        promptTokens: 0,
        cachedTokens: 0,
        completionTokens: 1,
        timeToFirstTokenMs: undefined,
        doneReason: undefined,
        error: 'boom',
      },
    );
  });

  it('swallows a throwing hook, keeps calling the others, and unregisters', () => {
    const registry = new GenerationHooksRegistry();
    registry.register({
      onGenerationStart: () => {
        throw new Error('host bug');
      },
    });
    const { calls, unregister } = recorder(registry);
    registry.begin('m', 'embed', process.hrtime.bigint()).cancel();
    assert.equal(calls.length, 2);
    unregister();
    unregister();
    registry.begin('m', 'embed', process.hrtime.bigint()).cancel();
    assert.equal(calls.length, 2);
  });
});

describe('request hooks from the inference services', () => {
  let bed: InferenceTestbed;
  let registry: GenerationHooksRegistry;

  beforeEach(async () => {
    registry = new GenerationHooksRegistry();
    bed = await createInferenceTestbed({ config: { contextLength: 256 }, hooks: registry });
    await bed.createModel('tiny');
  });

  afterEach(() => bed.close());

  const command = (overrides: Partial<ChatCommand> = {}): ChatCommand => ({
    model: 'tiny',
    messages: [{ role: 'user', content: 'Hi' }],
    options: {},
    startedAt: process.hrtime.bigint(),
    ...overrides,
  });

  it('chat: start, first token and end with the runner counts, before the done event is delivered', async () => {
    const { calls } = recorder(registry);
    let endsBeforeDone = -1;
    const events = await lastValueFrom(
      bed.chat.chat(command()).pipe(
        tap((e) => {
          if (e.kind === 'done') endsBeforeDone = calls.filter((c) => c.hook === 'end').length;
        }),
        toArray(),
      ),
    );
    assert.equal(events.at(-1)?.kind, 'done');
    assert.deepEqual(
      calls.map((c) => c.hook),
      ['start', 'first', 'end'],
    );
    assert.equal(endsBeforeDone, 1);
    const end = calls[2].info as GenerationEndInfo;
    const done = events.at(-1) as Extract<(typeof events)[number], { kind: 'done' }>;
    assert.equal(end.kind, 'chat');
    assert.equal(end.model, 'tiny:latest');
    assert.equal(end.promptTokens, done.metrics?.promptEvalCount);
    assert.equal(end.completionTokens, 3);
    assert.equal(end.doneReason, 'stop');
  });

  it('chat: a load-only request is no generation; a cancelled one ends with `cancelled`', async () => {
    const { calls } = recorder(registry);
    await lastValueFrom(bed.chat.chat(command({ messages: [] })).pipe(toArray()));
    assert.equal(calls.length, 0);
    bed.binding.script = () => ({ pieces: ['a', 'b', 'c', 'd'], delayMs: 20 });
    await lastValueFrom(bed.chat.chat(command()).pipe(take(1)));
    const end = calls.find((c) => c.hook === 'end')?.info as GenerationEndInfo;
    assert.equal(end.error, 'cancelled');
    assert.ok(end.completionTokens >= 1);
  });

  it('embed: one embed generation with the prompt tokens, none for an empty input', async () => {
    await bed.createModel('embedder', '', { architecture: 'bert', poolingType: 1 });
    const { calls } = recorder(registry);
    const result = await bed.embed.embed({
      model: 'embedder',
      input: ['one', 'two'],
      truncate: true,
      options: {},
      startedAt: process.hrtime.bigint(),
    });
    await bed.embed.embed({
      model: 'embedder',
      input: [],
      truncate: true,
      options: {},
      startedAt: process.hrtime.bigint(),
    });
    assert.deepEqual(
      calls.map((c) => c.hook),
      ['start', 'end'],
    );
    const end = calls[1].info as GenerationEndInfo;
    assert.equal(end.kind, 'embed');
    assert.equal(end.promptTokens, result.promptEvalCount);
    assert.equal(end.completionTokens, 0);
  });
});
