import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import { GenerateCommand } from '../../../src/generation/generation.types';
import { spec } from '../../utils/fake-runner';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

const command = (model: string, keepAliveMs?: number): GenerateCommand => ({
  model,
  prompt: 'Hi',
  raw: false,
  options: {},
  keepAliveMs,
  startedAt: process.hrtime.bigint(),
});

// A delete unloads the deleted weights (reference/ollama-api.md §3.12): the scheduler follows
// ModelLifecycleService.deleted$ (no controller in between).
describe('model deletion → scheduler unload', () => {
  let bed: InferenceTestbed;

  beforeEach(async () => {
    bed = await createInferenceTestbed({ config: { contextLength: 256 } });
    await bed.createModel('tiny', 'SYSTEM one');
    await bed.createModel('other', 'SYSTEM two', { chatTemplate: '{{ chatml }}', contextLength: 1024 });
  });

  afterEach(() => bed.close());

  const generate = (model: string) => lastValueFrom(bed.generate.generate(command(model)).pipe(toArray()));
  const loadedPaths = () =>
    bed.scheduler
      .loaded()
      .map((r) => r.spec.modelPath)
      .sort();

  it('unloads the runner of a deleted model through the deleted event, and only that one', async () => {
    const tiny = await bed.models.resolve('tiny');
    const other = await bed.models.resolve('other');
    assert.notEqual(tiny.modelPath, other.modelPath, 'two different weights blobs');
    await generate('tiny');
    await generate('other');
    assert.deepEqual(loadedPaths(), [tiny.modelPath, other.modelPath].sort(), 'both idle under their keep-alive');

    const events: string[] = [];
    const seen = bed.lifecycle.deleted$.subscribe((d) => events.push(`${d.name} ${d.modelPath}`));
    await bed.models.delete('tiny');
    seen.unsubscribe();

    assert.deepEqual(events, [`tiny:latest ${tiny.modelPath}`]);
    assert.deepEqual(loadedPaths(), [other.modelPath], 'the deleted model’s runner is gone, the other stays');
  });

  it('lets a busy runner finish, then unloads it', async () => {
    const tiny = await bed.models.resolve('tiny');
    const lease = await bed.scheduler.acquire({ spec: spec({ modelPath: tiny.modelPath, numCtx: 256 }) });
    await bed.models.delete('tiny');
    assert.equal(bed.scheduler.loaded()[0]?.expired, true, 'marked to unload, still serving its request');
    lease.release();
    assert.deepEqual(loadedPaths(), []);
  });

  it('stops following deletions at shutdown', async () => {
    await generate('tiny');
    await bed.scheduler.onApplicationShutdown();
    await bed.models.delete('tiny'); // no subscriber left: nothing to do, nothing thrown
    assert.deepEqual(loadedPaths(), []);
  });
});
