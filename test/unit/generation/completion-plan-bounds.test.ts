import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CompletionService } from '../../../src/generation/completion.service';
import { INT32_MAX } from '../../../src/generation/options/option-rules';
import { PromptService } from '../../../src/generation/prompt/prompt.service';
import { SystemMemoryProbe } from '../../../src/scheduler/memory.estimator';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

// Issue 32 item 3: the runner spec (what the scheduler estimates and loads) never carries an absurd option value.
describe('CompletionService.plan: option bounds reach the runner spec and the memory estimate', () => {
  let bed: InferenceTestbed;

  beforeEach(async () => {
    bed = await createInferenceTestbed({ config: { numParallel: 0 } });
    await bed.createModel('m', 'PARAMETER num_batch 0\nPARAMETER repeat_last_n 2147483648\n', {
      chatTemplate: '{{ chatml }}',
      contextLength: 2048,
    });
  });
  afterEach(() => bed.close());

  it('num_ctx 2^31 plans the training context; the estimate equals that of the training context', async () => {
    const model = await bed.models.resolve('m');
    const completion = new CompletionService(bed.config, bed.scheduler, new PromptService());
    const huge = completion.plan(model, { num_ctx: 2 ** 31, num_thread: 2 ** 31, num_gpu: -(2 ** 31) });
    const train = completion.plan(model, { num_ctx: 2048 });
    assert.equal(huge.spec.numCtx, 2048);
    assert.equal(huge.spec.numGpu, -1);
    assert.ok(huge.spec.numThread >= 1 && huge.spec.numThread <= 512);
    // The Modelfile's num_batch 0 is 1; its repeat window is num_ctx.
    assert.equal(huge.spec.numBatch, 1);
    assert.equal(huge.options.sampling.repeatLastN, 2048);
    const probe = new SystemMemoryProbe();
    const estimate = await probe.estimate(huge.spec);
    assert.ok(Number.isFinite(estimate));
    assert.equal(estimate, await probe.estimate({ ...train.spec, numBatch: 1 }));
    assert.ok(completion.plan(model, { num_predict: 2 ** 53 }).options.sampling.numPredict === INT32_MAX);
  });
});
