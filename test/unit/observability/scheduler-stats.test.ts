import assert from 'node:assert/strict';
import { Logger } from '@nestjs/common';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { lastValueFrom, Subscription, toArray } from 'rxjs';
import { ServerBusyError } from '../../../src/common/errors';
import { ChatCommand } from '../../../src/generation/generation.types';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

const command = (overrides: Partial<ChatCommand> = {}): ChatCommand => ({
  model: 'tiny',
  messages: [{ role: 'user', content: 'Hi' }],
  options: {},
  startedAt: process.hrtime.bigint(),
  ...overrides,
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The scheduler's side of the metrics gauges and of graceful shutdown, over the LlamaRunner and the FakeBinding.
describe('SchedulerService stats() and abortAll()', () => {
  let bed: InferenceTestbed;

  beforeEach(async () => {
    Logger.overrideLogger(false);
    bed = await createInferenceTestbed({ config: { contextLength: 256, numParallel: 2 } });
    await bed.createModel('tiny');
  });

  afterEach(() => bed.close());

  it('is idle with nothing loaded, then reports the runner by model name with its slots and KV cells', async () => {
    assert.deepEqual(bed.scheduler.stats(), { queued: 0, running: 0, runners: [], pendingLoads: [] });
    await lastValueFrom(bed.chat.chat(command()).pipe(toArray()));
    const idle = bed.scheduler.stats();
    assert.deepEqual(idle, {
      queued: 0,
      running: 0,
      runners: [
        {
          model: 'tiny:latest',
          slotsTotal: 2,
          slotsBusy: 0,
          slotsWaiting: 0,
          kvCellsTotal: 512,
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
          // A LlamaRunner always says how many adapters it keeps (LLAMAD_MAX_LORAS, default 4) and which.
          loras: { max: 4, resident: [], running: [], waiting: [] },
        },
      ],
      pendingLoads: [],
    });
  });

  it('counts busy slots, queued requests and the KV cells of generations in flight', async () => {
    bed.binding.script = () => ({ pieces: ['a', 'b', 'c', 'd', 'e', 'f'], delayMs: 15 });
    const subs: Subscription[] = [];
    let tokens = 0;
    for (let i = 0; i < 3; i++) {
      subs.push(bed.chat.chat(command()).subscribe({ next: () => tokens++, error: () => undefined }));
    }
    while (tokens < 2) await sleep(5);
    await sleep(40);
    const busy = bed.scheduler.stats();
    assert.equal(busy.runners[0].slotsBusy, 2);
    assert.equal(busy.queued, 1, 'the third waits for a slot');
    assert.equal(busy.running, 2);
    assert.equal(busy.runners[0].waiting, 1, "per runner: the third at the model's slot gate");
    assert.equal(busy.runners[0].running, 2);
    assert.ok(busy.runners[0].kvCellsUsed > 0, JSON.stringify(busy));
    assert.ok(busy.runners[0].kvCellsUsed <= 512);
    assert.equal(bed.scheduler.inFlightCount(), 3);
    for (const s of subs) s.unsubscribe();
    await sleep(50);
    const after = bed.scheduler.stats();
    assert.equal(after.runners[0].slotsBusy, 0);
    assert.equal(after.runners[0].kvCellsUsed, 0);
    assert.equal(bed.scheduler.inFlightCount(), 0);
  });

  it('abortAll ends every request in flight with the error (generations cancelled, slots freed)', async () => {
    bed.binding.script = () => ({ pieces: Array.from({ length: 50 }, () => 'x'), delayMs: 10 });
    const outcome = lastValueFrom(bed.chat.chat(command()).pipe(toArray())).then(
      () => 'completed',
      (err: unknown) => err,
    );
    await sleep(60);
    const ended = bed.scheduler.abortAll(new ServerBusyError('server is shutting down'));
    assert.equal(ended, 1);
    const err = await outcome;
    assert.ok(err instanceof ServerBusyError, String(err));
    assert.equal(err.message, 'server is shutting down');
    assert.equal(bed.scheduler.inFlightCount(), 0);
    await sleep(30);
    assert.equal(bed.scheduler.stats().runners[0].slotsBusy, 0);
    assert.equal(bed.scheduler.abortAll(new Error('none left')), 0);
  });
});
