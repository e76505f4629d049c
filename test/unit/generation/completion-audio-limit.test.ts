import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import type { DaemonConfig } from '../../../src/config';
import { createInferenceTestbed, InferenceTestbed, tinyGenerateCommand } from '../../utils/inference-testbed';

const command = tinyGenerateCommand;

// LLAMAD_MAX_AUDIO_SECONDS (DaemonConfig.maxAudioSeconds) rides on every runner task as
// NativeTaskParams.maxAudioSeconds; 0 (no bound) leaves the field out.
describe('CompletionService: the audio duration bound of a task', () => {
  let bed: InferenceTestbed;
  afterEach(() => bed.close());

  async function submittedWith(config: Partial<DaemonConfig>): Promise<number | undefined> {
    bed = await createInferenceTestbed({ config: { contextLength: 256, ...config } });
    await bed.createModel('tiny');
    await lastValueFrom(bed.generate.generate(command()).pipe(toArray()));
    assert.equal(bed.binding.submitted.length, 1);
    return bed.binding.submitted[0].maxAudioSeconds;
  }

  it('600 s by default, the configured value otherwise, absent when 0', async () => {
    assert.equal(await submittedWith({}), 600);
    await bed.close();
    assert.equal(await submittedWith({ maxAudioSeconds: 5 }), 5);
    await bed.close();
    assert.equal(await submittedWith({ maxAudioSeconds: 0 }), undefined);
  });
});
