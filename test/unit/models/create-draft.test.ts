import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import type { NativeBinding, NativeQuantizeParams } from '../../../binding';
import { InvalidRequestError, ModelNotFoundError } from '../../../src/common/errors';
import { MediaType } from '../../../src/models/manifest';
import { ModelsService, NOT_GGUF_MESSAGE } from '../../../src/models/models.service';
import { renderModelfile } from '../../../src/models/modelfile.renderer';
import { writeTinyGguf } from '../../utils/gguf-fixtures';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';
import { newModelsService } from '../../utils/models-service';

/** ggml file types of general.file_type. */
const FTYPE = { F16: 1, Q4_0: 2, Q8_0: 7 } as const;

async function rejectsWith(promise: Promise<unknown>, type: new (...a: never[]) => Error, message: string | RegExp) {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof type, `expected ${type.name}, got ${String(err)}`);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

async function run(models: ModelsService, plan: Awaited<ReturnType<ModelsService['prepareCreate']>>) {
  return (await lastValueFrom(models.create(plan).pipe(toArray()))).map((p) => p.status);
}

describe('ModelsService create: the speculative-decoding draft (DRAFT, draft_files, draft_quantize)', () => {
  let bed: InferenceTestbed;
  let models: ModelsService;
  let target: string;
  let draft: string;
  const quantizeCalls: Array<{ input: string; params: NativeQuantizeParams }> = [];

  beforeEach(async () => {
    bed = await createInferenceTestbed();
    quantizeCalls.length = 0;
    const binding = {
      quantize: async (input: string, output: string, params: NativeQuantizeParams) => {
        quantizeCalls.push({ input, params });
        await writeTinyGguf(output, { architecture: 'qwen2', fileType: FTYPE.Q8_0 });
      },
    } as unknown as NativeBinding;
    models = newModelsService(bed.store, () => binding);
    target = join(bed.dir, 'target.gguf');
    draft = join(bed.dir, 'draft.gguf');
    await writeTinyGguf(target, { architecture: 'llama', fileType: FTYPE.F16 });
    await writeTinyGguf(draft, { architecture: 'qwen2', fileType: FTYPE.F16 });
  });

  afterEach(() => bed.close());

  it('stores a Modelfile DRAFT file as a draft layer after the weights, with the config draft object', async () => {
    await run(models, await models.prepareCreate({ model: 'd', modelfile: `FROM ${target}\nDRAFT ${draft}` }));
    const r = await models.resolve('d');
    assert.deepEqual(
      r.manifest.layers.map((l) => l.mediaType),
      [MediaType.MODEL, MediaType.DRAFT],
    );
    const layer = r.manifest.layers[1];
    assert.equal(r.draftPath, bed.store.blobPath(layer.digest));
    // Go's ConfigV2 order: draft just before architecture/os.
    const raw = (await bed.store.readBlob(r.manifest.config.digest)).toString('utf8');
    assert.match(
      raw,
      /"file_type":"F16","draft":\{"model_format":"gguf","architecture":"qwen2"\},"architecture":"amd64"/,
    );
    assert.deepEqual(r.config.draft, { model_format: 'gguf', architecture: 'qwen2' });
    // /api/show's Modelfile (reference §10.6): DRAFT after ADAPTER, before projector FROMs.
    const text = renderModelfile({ ...r, params: r.params, draftPath: r.draftPath });
    assert.ok(text.includes(`FROM ${r.modelPath}\nDRAFT ${r.draftPath}\n`), text);
  });

  it('takes draft_files (an uploaded blob) in the JSON form; a model created from it inherits the draft', async () => {
    const blob = await bed.store.importFile(draft);
    const main = await bed.store.importFile(target);
    await run(
      models,
      await models.prepareCreate({
        model: 'j',
        files: { 't.gguf': main.digest },
        draftFiles: { 'd.gguf': blob.digest },
      }),
    );
    const j = await models.resolve('j');
    assert.equal(j.manifest.layers.find((l) => l.mediaType === MediaType.DRAFT)?.digest, blob.digest);
    await run(models, await models.prepareCreate({ model: 'child', from: 'j', system: 'hi' }));
    const child = await models.resolve('child');
    assert.equal(child.draftPath, j.draftPath);
    assert.deepEqual(child.config.draft, { model_format: 'gguf', architecture: 'qwen2' });
    // A new draft replaces the inherited one (DRAFT naming an existing model takes its weights).
    await run(models, await models.prepareCreate({ model: 'swap', modelfile: 'FROM j\nDRAFT j' }));
    const swap = await models.resolve('swap');
    const drafts = swap.manifest.layers.filter((l) => l.mediaType === MediaType.DRAFT);
    assert.deepEqual(
      drafts.map((l) => l.digest),
      [main.digest],
    );
    assert.deepEqual(swap.config.draft, { model_format: 'gguf', architecture: 'llama' });
  });

  it('quantizes the draft with draft_quantize through the quantizer; the weights are left alone', async () => {
    const plan = await models.prepareCreate({
      model: 'q',
      modelfile: `FROM ${target}\nDRAFT ${draft}`,
      draftQuantize: 'q8_0',
    });
    await run(models, plan);
    assert.equal(quantizeCalls.length, 1);
    assert.equal(quantizeCalls[0].input, draft);
    assert.equal(quantizeCalls[0].params.type, 'Q8_0');
    const r = await models.resolve('q');
    assert.equal(r.config.file_type, 'F16');
    assert.equal(r.config.draft?.architecture, 'qwen2');
  });

  it("rejects draft mistakes with Ollama's messages before anything is written", async () => {
    await rejectsWith(
      models.prepareCreate({ model: 'x', modelfile: `FROM ${target}`, draftQuantize: 'q8_0' }),
      InvalidRequestError,
      '--draft-quantize requires a DRAFT model',
    );
    const q8 = join(bed.dir, 'q8.gguf');
    await writeTinyGguf(q8, { fileType: FTYPE.Q8_0 });
    await rejectsWith(
      models.prepareCreate({ model: 'x', modelfile: `FROM ${target}\nDRAFT ${q8}`, draftQuantize: 'q4_K_M' }),
      InvalidRequestError,
      'draft quantization requires an unquantized draft model, got Q8_0',
    );
    await rejectsWith(
      models.prepareCreate({ model: 'x', modelfile: `FROM ${target}\nDRAFT ./missing.gguf` }),
      InvalidRequestError,
      'DRAFT file "./missing.gguf" does not exist',
    );
    await rejectsWith(
      models.prepareCreate({ model: 'x', modelfile: `FROM ${target}\nDRAFT nosuchmodel` }),
      ModelNotFoundError,
      /not found/,
    );
    const text = join(bed.dir, 'not.gguf');
    await writeFile(text, 'hello');
    await rejectsWith(
      models.prepareCreate({ model: 'x', modelfile: `FROM ${target}\nDRAFT ${text}` }),
      InvalidRequestError,
      NOT_GGUF_MESSAGE,
    );
    const blob = await bed.store.importFile(draft);
    await rejectsWith(
      models.prepareCreate({ model: 'x', from: target, draftFiles: { a: blob.digest, b: blob.digest } }),
      InvalidRequestError,
      'only one draft model file is supported',
    );
    await rejectsWith(
      models.prepareCreate({ model: 'x', from: target, draftFiles: { a: 'sha256:nope' } }),
      InvalidRequestError,
      'invalid digest format',
    );
    // A non-local requester may not name server files with DRAFT.
    await rejectsWith(
      models.prepareCreate({ model: 'x', modelfile: `FROM ${target}\nDRAFT ${draft}` }, { local: false }),
      InvalidRequestError,
      /only for clients on the same machine/,
    );
    assert.equal(quantizeCalls.length, 0);
  });
});
