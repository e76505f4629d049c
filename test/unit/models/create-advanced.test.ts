import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import type { NativeBinding, NativeQuantizeParams } from '../../../binding';
import { DigestMismatchError, InternalError, InvalidRequestError } from '../../../src/common/errors';
import { buildManifest, MediaType } from '../../../src/models/manifest';
import { ModelName } from '../../../src/models/model-name';
import { ModelLifecycleService } from '../../../src/models/model-lifecycle.service';
import { ModelsService, NOT_GGUF_MESSAGE, STALE_TEMP_AGE_MS } from '../../../src/models/models.service';
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

const statuses = async (models: ModelsService, plan: Awaited<ReturnType<ModelsService['prepareCreate']>>) =>
  (await lastValueFrom(models.create(plan).pipe(toArray()))).map((p) => p.status);

describe('ModelsService create: quantize, adapters, blobs, templates', () => {
  let bed: InferenceTestbed;
  let models: ModelsService;
  let gguf: string;
  const quantizeCalls: Array<{ input: string; output: string; params: NativeQuantizeParams }> = [];

  beforeEach(async () => {
    bed = await createInferenceTestbed();
    quantizeCalls.length = 0;
    // A stand-in for binding.quantize: writes a GGUF whose file type is the target's.
    const binding = {
      quantize: async (input: string, output: string, params: NativeQuantizeParams) => {
        quantizeCalls.push({ input, output, params });
        await writeTinyGguf(output, { fileType: params.type === 'Q8_0' ? FTYPE.Q8_0 : FTYPE.Q4_0 });
      },
    } as unknown as NativeBinding;
    models = newModelsService(bed.store, () => binding);
    gguf = join(bed.dir, 'f16.gguf');
    await writeTinyGguf(gguf, { fileType: FTYPE.F16 });
  });

  afterEach(() => bed.close());

  it('quantizes an F16 file into a new blob (JSON form records), the F16 source is not stored', async () => {
    const blob = await bed.store.importFile(gguf);
    const plan = await models.prepareCreate({ model: 'q8', files: { 'm.gguf': blob.digest }, quantize: 'q8_0' });
    const records = await lastValueFrom(models.create(plan).pipe(toArray()));
    // Quantization progress (Ollama's): completed 0 first, = total (the source size) last, under one status.
    const progress = records.filter((r) => r.status === 'quantizing F16 model to Q8_0');
    const total = (await stat(gguf)).size;
    assert.deepEqual(progress[0], { status: progress[0].status, digest: '0000000000000000000', total, completed: 0 });
    assert.deepEqual(progress.at(-1), { ...progress[0], completed: total });
    assert.deepEqual(
      records.map((r) => r.status).filter((st, i, all) => st !== all[i - 1]),
      [
        'parsing modelfile',
        'looking for base model m.gguf',
        'copying layers',
        'quantizing F16 model to Q8_0',
        'verifying conversion',
        'setting system instructions',
        'success',
      ],
    );
    assert.equal(quantizeCalls.length, 1);
    assert.equal(quantizeCalls[0].input, bed.store.blobPath(blob.digest));
    assert.equal(quantizeCalls[0].params.type, 'Q8_0');
    assert.match(quantizeCalls[0].output, /[\\/]blobs[\\/]\.tmp-/);
    const resolved = await models.resolve('q8');
    assert.notEqual(resolved.modelDigest, blob.digest);
    assert.equal(ModelsService.details(resolved.config).quantization_level, 'Q8_0');
    // No temporary file is left behind.
    assert.deepEqual(
      (await readdir(join(bed.config.modelsDir, 'blobs'))).filter((f) => f.startsWith('.')),
      [],
    );
  });

  it('quantizes with the spec’s Modelfile form, keeping its fixed records; from a model base too', async () => {
    const plan = await models.prepareCreate({ model: 'q4', modelfile: `FROM ${gguf}`, quantize: 'Q4_0' });
    assert.deepEqual(await statuses(models, plan), [
      'parsing modelfile',
      `looking for base model ${gguf}`,
      'copying layers',
      'setting system instructions',
      'success',
    ]);
    assert.equal(ModelsService.details((await models.resolve('q4')).config).quantization_level, 'Q4_0');
    // The F16 file itself was never imported: one weights blob only.
    const base = await models.prepareCreate({ model: 'f16', modelfile: `FROM ${gguf}\nSYSTEM s` });
    await statuses(models, base);
    const fromModel = await models.prepareCreate({ model: 'q8b', from: 'f16', quantize: 'q8_0' });
    await statuses(models, fromModel);
    const r = await models.resolve('q8b');
    assert.equal(ModelsService.details(r.config).quantization_level, 'Q8_0');
    assert.equal(r.system, 's');
    assert.equal(r.manifest.layers.find((l) => l.mediaType === MediaType.MODEL)?.from, undefined);
  });

  it("rejects quantizing a quantized source and unknown types with Ollama's messages", async () => {
    const q = join(bed.dir, 'q4.gguf');
    await writeTinyGguf(q, { fileType: FTYPE.Q4_0 });
    await rejectsWith(
      models.prepareCreate({ model: 'x', modelfile: `FROM ${q}`, quantize: 'q8_0' }),
      InvalidRequestError,
      'quantization is only supported for F16, BF16 and F32 models',
    );
    await rejectsWith(
      models.prepareCreate({ model: 'x', modelfile: `FROM ${gguf}`, quantize: 'q7_x' }),
      InvalidRequestError,
      /^unsupported quantization type q7_x - supported types are /,
    );
  });

  it('fails before any progress when the addon cannot be loaded for quantization', async () => {
    await rejectsWith(
      bed.models.prepareCreate({ model: 'x', modelfile: `FROM ${gguf}`, quantize: 'q8_0' }),
      InternalError,
      /^quantization needs the native addon: /,
    );
  });

  it('stores one ADAPTER as an adapter layer after the weights; two are rejected; non-GGUF rejected', async () => {
    // A GGUF-shaped stand-in for a LoRA adapter (generating a real LoRA for the tiny model is not practical here).
    const lora = join(bed.dir, 'lora.gguf');
    await writeTinyGguf(lora, { architecture: 'llama' });
    await writeFile(lora + '.pad', 'x');
    const plan = await models.prepareCreate({ model: 'a', modelfile: `FROM ${gguf}\nADAPTER ${lora}` });
    await statuses(models, plan);
    const r = await models.resolve('a');
    assert.deepEqual(r.manifest.layers.map((l) => l.mediaType).slice(0, 2), [MediaType.MODEL, MediaType.ADAPTER]);
    assert.equal(r.adapterPaths.length, 1);
    // Uploaded adapter blob through the JSON form.
    const blob = await bed.store.importFile(lora);
    await statuses(models, await models.prepareCreate({ model: 'b', from: 'a', adapters: { 'l.gguf': blob.digest } }));
    assert.equal(
      (await models.resolve('b')).manifest.layers.filter((l) => l.mediaType === MediaType.ADAPTER).length,
      1,
    );
    await rejectsWith(
      models.prepareCreate({ model: 'x', modelfile: `FROM ${gguf}\nADAPTER ${lora}\nADAPTER ${lora}` }),
      InvalidRequestError,
      'only one adapter is currently supported',
    );
    await rejectsWith(
      models.prepareCreate({ model: 'x', from: 'a', adapters: { a: blob.digest, b: blob.digest } }),
      InvalidRequestError,
      'only one adapter is currently supported',
    );
    await rejectsWith(
      models.prepareCreate({ model: 'x', modelfile: `FROM ${gguf}\nADAPTER ${lora}.pad` }),
      InvalidRequestError,
      NOT_GGUF_MESSAGE,
    );
  });

  it('accepts FROM @sha256:… / sha256:… blob references and rejects missing blobs', async () => {
    const blob = await bed.store.importFile(gguf);
    for (const ref of [`@${blob.digest}`, blob.digest, blob.digest.replace(':', '-')]) {
      const plan = await models.prepareCreate({ model: 'fb', modelfile: `FROM ${ref}` });
      await statuses(models, plan);
      assert.equal((await models.resolve('fb')).modelDigest, blob.digest);
    }
    await rejectsWith(
      models.prepareCreate({ model: 'x', modelfile: `FROM @sha256:${'1'.repeat(64)}` }),
      InvalidRequestError,
      `blob "sha256:${'1'.repeat(64)}" not found`,
    );
    await rejectsWith(
      models.prepareCreate({ model: 'x', files: { 'm.gguf': 'sha256:zz' } }),
      InvalidRequestError,
      'invalid digest format',
    );
  });

  it('rejects a TEMPLATE that is not a Go template with `template error: …` (both forms)', async () => {
    await rejectsWith(
      models.prepareCreate({ model: 'x', modelfile: `FROM ${gguf}\nTEMPLATE "{{ .Prompt"` }),
      InvalidRequestError,
      /^template error: /,
    );
    await rejectsWith(
      models
        .prepareCreate({ model: 'x', modelfile: `FROM ${gguf}`, template: 'ignored' })
        .then(() =>
          models.prepareCreate({ model: 'x', files: { a: `sha256:${'0'.repeat(64)}` }, template: '{{ end }}' }),
        ),
      InvalidRequestError,
      /^template error: /,
    );
  });

  it('stores the weights of ten variants of one base once', async () => {
    await statuses(models, await models.prepareCreate({ model: 'base', modelfile: `FROM ${gguf}` }));
    for (let i = 0; i < 10; i++) {
      const plan = await models.prepareCreate({ model: `v${i}`, modelfile: `FROM base\nSYSTEM variant ${i}` });
      await statuses(models, plan);
    }
    const dir = join(bed.config.modelsDir, 'blobs');
    const weightsSize = (await stat(gguf)).size;
    const sizes = await Promise.all((await readdir(dir)).map(async (f) => (await stat(join(dir, f))).size));
    assert.equal(sizes.filter((s) => s === weightsSize).length, 1);
    const digest = (await models.resolve('v0')).modelDigest;
    for (let i = 1; i < 10; i++) assert.equal((await models.resolve(`v${i}`)).modelDigest, digest);
  });
});

describe('ModelStoreRepository uploads and startup cleanup', () => {
  let bed: InferenceTestbed;

  beforeEach(async () => {
    bed = await createInferenceTestbed();
  });

  afterEach(() => bed.close());

  it('receives a verified blob (created once), rejects a mismatch and removes its temp file', async () => {
    const data = Buffer.from('some blob bytes');
    const digest = `sha256:${createHash('sha256').update(data).digest('hex')}`;
    assert.equal((await bed.store.receiveBlob(Readable.from([data]), digest)).created, true);
    assert.equal((await bed.store.receiveBlob(Readable.from([data]), digest)).created, false);
    const wrong = `sha256:${'0'.repeat(64)}`;
    await rejectsWith(
      bed.store.receiveBlob(Readable.from([data]), wrong),
      DigestMismatchError,
      `digest mismatch, expected "${wrong}", got "${digest}"`,
    );
    assert.deepEqual(await readdir(join(bed.config.modelsDir, 'blobs')), [digest.replace(':', '-')]);
  });

  it('removes only stale non-blob files at startup', async () => {
    const dir = join(bed.config.modelsDir, 'blobs');
    const blob = await bed.store.writeBlob('keep me');
    // Referenced by a manifest (the startup sweep removes old unreferenced blobs: store-concurrency.test.ts).
    await bed.store.writeManifest(
      ModelName.parse('keeper')!,
      buildManifest({ mediaType: MediaType.CONFIG, ...blob }, []),
    );
    const old = new Date(Date.now() - STALE_TEMP_AGE_MS - 60_000);
    const stale = join(dir, '.tmp-1-abc');
    const fresh = join(dir, '.tmp-2-def');
    const partial = join(dir, `sha256-${'a'.repeat(64)}-partial`);
    for (const f of [stale, fresh, partial]) await writeFile(f, 'x');
    await utimes(stale, old, old);
    await utimes(partial, old, old);
    await utimes(bed.store.blobPath(blob.digest), old, old);
    await new ModelLifecycleService(bed.store).onModuleInit();
    assert.deepEqual((await readdir(dir)).sort(), ['.tmp-2-def', blob.digest.replace(':', '-')].sort());
  });
});
