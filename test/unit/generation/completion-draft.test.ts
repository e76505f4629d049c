import assert from 'node:assert/strict';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CompletionService } from '../../../src/generation/completion.service';
import { PromptService } from '../../../src/generation/prompt/prompt.service';
import { writeTinyGguf } from '../../utils/gguf-fixtures';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

// The runner spec of a model with a speculative-decoding draft (reference/ollama-api.md §4.1 draft_num_predict):
// the draft's path is a load option (the runner loads it); its length is per request; none without a draft.
describe('CompletionService.plan: the draft model', () => {
  let bed: InferenceTestbed;
  let completion: CompletionService;

  beforeEach(async () => {
    bed = await createInferenceTestbed();
    completion = new CompletionService(bed.config, bed.scheduler, new PromptService());
    const draft = join(bed.dir, 'draft.gguf');
    await writeTinyGguf(draft, { architecture: 'qwen2' });
    await bed.createModel('plain');
    await bed.createModel('drafted', `DRAFT ${draft}\n`);
    await bed.createModel('drafted-two', `DRAFT ${draft}\nPARAMETER draft_num_predict 2\n`);
  });
  afterEach(() => bed.close());

  it('carries draftModelPath and a draft length (4 by default; Modelfile, then request) only with a draft', async () => {
    const drafted = await bed.models.resolve('drafted');
    assert.ok(drafted.draftPath);
    const plan = completion.plan(drafted, {});
    assert.equal(plan.spec.draftModelPath, drafted.draftPath);
    assert.deepEqual(plan.options.draft, { nMax: 4 });
    const seven = completion.plan(drafted, { draft_num_predict: 7 });
    assert.deepEqual(seven.options.draft, { nMax: 7 });
    assert.deepEqual(seven.spec, plan.spec, 'the length needs no other runner');
    assert.deepEqual(completion.plan(await bed.models.resolve('drafted-two'), {}).options.draft, { nMax: 2 });
    const plain = completion.plan(await bed.models.resolve('plain'), { draft_num_predict: 7 });
    assert.equal(plain.spec.draftModelPath, undefined);
    assert.equal(plain.options.draft, undefined);
  });
});

// LLAMAD_CACHE_RAM (MiB, the whole daemon's budget) becomes the spec's cacheRamBytes: its share per loaded model
// (budget / OLLAMA_MAX_LOADED_MODELS, 3 when unset); 0 leaves it out.
describe('CompletionService.plan: the host-RAM prompt cache', () => {
  let bed: InferenceTestbed;

  afterEach(() => bed.close());

  for (const [mib, maxLoadedModels, bytes] of [
    [8192, 0, Math.floor((8192 * 2 ** 20) / 3)],
    [16, 1, 16 * 2 ** 20],
    [16, 4, 4 * 2 ** 20],
    [0, 0, undefined],
  ] as const) {
    it(`LLAMAD_CACHE_RAM=${mib}, OLLAMA_MAX_LOADED_MODELS=${maxLoadedModels} → cacheRamBytes ${bytes}`, async () => {
      bed = await createInferenceTestbed({ config: { cacheRamMiB: mib, maxLoadedModels } });
      const completion = new CompletionService(bed.config, bed.scheduler, new PromptService());
      await bed.createModel('plain');
      assert.equal(completion.plan(await bed.models.resolve('plain'), {}).spec.cacheRamBytes, bytes);
    });
  }
});
