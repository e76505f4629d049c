import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import { InvalidRequestError, ModelNotFoundError } from '../../../src/common/errors';
import { MediaType } from '../../../src/models/manifest';
import { ModelName } from '../../../src/models/model-name';
import { ModelsService, NOT_GGUF_MESSAGE } from '../../../src/models/models.service';
import { writeTinyGguf } from '../../utils/gguf-fixtures';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

const SPEC_PROGRESS = (base: string) => [
  'parsing modelfile',
  `looking for base model ${base}`,
  'copying layers',
  'setting system instructions',
  'success',
];

async function rejectsWith(promise: Promise<unknown>, type: new (...a: never[]) => Error, message: string | RegExp) {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof type, `expected ${type.name}, got ${String(err)}`);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

describe('ModelsService.create', () => {
  let bed: InferenceTestbed;
  let gguf: string;

  beforeEach(async () => {
    bed = await createInferenceTestbed();
    gguf = join(bed.dir, 'src.gguf');
    await writeTinyGguf(gguf, { chatTemplate: '{% for m in messages %}{{ m.content }}{% endfor %}' });
  });

  afterEach(() => bed.close());

  it('copies a GGUF into the store and writes every layer and the config', async () => {
    const modelfile = [
      `FROM ${gguf}`,
      'TEMPLATE """{{ .Prompt }}"""',
      'SYSTEM You are terse.',
      'PARAMETER temperature 0',
      'PARAMETER stop <|im_end|>',
      'PARAMETER stop END',
      'MESSAGE user hi',
      'MESSAGE assistant hello',
      'LICENSE MIT',
    ].join('\n');
    const plan = await bed.models.prepareCreate({ model: 'tiny', modelfile });
    const progress = await lastValueFrom(bed.models.create(plan).pipe(toArray()));
    assert.deepEqual(
      progress.map((p) => p.status),
      SPEC_PROGRESS(gguf),
    );

    const stored = await bed.store.readManifest(ModelName.parse('tiny')!);
    assert.ok(stored);
    const { manifest } = stored;
    assert.equal(manifest.schemaVersion, 2);
    assert.equal(manifest.mediaType, 'application/vnd.docker.distribution.manifest.v2+json');
    assert.equal(manifest.config.mediaType, 'application/vnd.docker.container.image.v1+json');
    assert.deepEqual(
      manifest.layers.map((l) => l.mediaType),
      [MediaType.MODEL, MediaType.TEMPLATE, MediaType.SYSTEM, MediaType.LICENSE, MediaType.PARAMS, MediaType.MESSAGES],
    );
    const weights = await readFile(gguf);
    assert.equal(manifest.layers[0].digest, `sha256:${createHash('sha256').update(weights).digest('hex')}`);
    assert.equal(manifest.layers[0].size, weights.length);
    const blob = async (i: number) => (await bed.store.readBlob(manifest.layers[i].digest)).toString('utf8');
    assert.equal(await blob(1), '{{ .Prompt }}');
    assert.equal(await blob(2), 'You are terse.');
    assert.equal(await blob(3), 'MIT');
    // Go's encoder: sorted keys, HTML-escaped, trailing newline.
    assert.equal(await blob(4), '{"stop":["\\u003c|im_end|\\u003e","END"],"temperature":0}\n');
    assert.equal(await blob(5), '[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]\n');
    const config = JSON.parse((await bed.store.readBlob(manifest.config.digest)).toString('utf8')) as Record<
      string,
      unknown
    >;
    assert.deepEqual(config, {
      model_format: 'gguf',
      model_family: 'llama',
      model_families: ['llama'],
      model_type: '4.39M',
      file_type: 'F16',
      architecture: 'amd64',
      os: 'linux',
    });
  });

  it('creates from an existing model, inheriting layers and overriding what the Modelfile sets', async () => {
    await bed.createModel('base', 'SYSTEM old\nPARAMETER temperature 0.5\nPARAMETER top_k 7');
    const plan = await bed.models.prepareCreate({
      model: 'derived:v2',
      modelfile: 'FROM base\nSYSTEM new\nPARAMETER temperature 0',
    });
    const progress = await lastValueFrom(bed.models.create(plan).pipe(toArray()));
    assert.deepEqual(
      progress.map((p) => p.status),
      SPEC_PROGRESS('base'),
    );
    const derived = await bed.models.resolve('derived:v2');
    const base = await bed.models.resolve('base');
    assert.equal(derived.modelDigest, base.modelDigest);
    assert.equal(derived.system, 'new');
    assert.deepEqual(derived.params, { temperature: 0, top_k: 7 });
    assert.equal(derived.manifest.layers[0].from, 'base:latest');
  });

  it('accepts the current JSON form (from + system + parameters)', async () => {
    await bed.createModel('base');
    const plan = await bed.models.prepareCreate({
      model: 'json',
      from: 'base',
      system: 'S',
      parameters: { num_ctx: 256 },
    });
    await lastValueFrom(bed.models.create(plan).pipe(toArray()));
    const model = await bed.models.resolve('json');
    assert.equal(model.system, 'S');
    assert.deepEqual(model.params, { num_ctx: 256 });
  });

  it('rejects what Ollama rejects, before any progress', async () => {
    const notGguf = join(bed.dir, 'notes.txt');
    await writeFile(notGguf, 'hello');
    await rejectsWith(
      bed.models.prepareCreate({ model: 'x', modelfile: `FROM ${notGguf}` }),
      InvalidRequestError,
      NOT_GGUF_MESSAGE,
    );
    await rejectsWith(
      bed.models.prepareCreate({ model: 'x', modelfile: 'FROM /no/such/file.gguf' }),
      InvalidRequestError,
      'FROM file "/no/such/file.gguf" does not exist',
    );
    await rejectsWith(
      bed.models.prepareCreate({ model: 'x', modelfile: 'FROM missing-model' }),
      ModelNotFoundError,
      "model 'missing-model:latest' not found",
    );
    await rejectsWith(
      bed.models.prepareCreate({ model: '', modelfile: `FROM ${gguf}` }),
      InvalidRequestError,
      'model is required',
    );
    await rejectsWith(
      bed.models.prepareCreate({ model: 'bad name!', modelfile: `FROM ${gguf}` }),
      InvalidRequestError,
      'invalid model name',
    );
    await rejectsWith(
      bed.models.prepareCreate({ model: 'x', modelfile: `FROM ${gguf}\nBOGUS 1` }),
      InvalidRequestError,
      /^\(line 2\): command must be one of/,
    );
    await rejectsWith(
      bed.models.prepareCreate({ model: 'x', modelfile: `FROM ${gguf}\nPARAMETER nope 1` }),
      InvalidRequestError,
      "unknown parameter 'nope'",
    );
    await rejectsWith(
      bed.models.prepareCreate({ model: 'x', modelfile: `FROM ${gguf}\nADAPTER ./a.gguf` }),
      InvalidRequestError,
      'ADAPTER is not supported yet',
    );
    await rejectsWith(
      bed.models.prepareCreate({ model: 'x' }),
      InvalidRequestError,
      "neither 'from' or 'files' was specified",
    );
    await rejectsWith(
      bed.models.prepareCreate({ model: 'x', modelfile: `FROM ${bed.dir}` }),
      InvalidRequestError,
      /is a directory/,
    );
  });

  it('creates from a blob already in the store (files)', async () => {
    const blob = await bed.store.importFile(gguf);
    const plan = await bed.models.prepareCreate({ model: 'fromblob', files: { 'model.gguf': blob.digest } });
    await lastValueFrom(bed.models.create(plan).pipe(toArray()));
    assert.equal((await bed.models.resolve('fromblob')).modelDigest, blob.digest);
    await rejectsWith(
      bed.models.prepareCreate({ model: 'x', files: { 'model.gguf': `sha256:${'0'.repeat(64)}` } }),
      InvalidRequestError,
      /^blob "sha256:0+" not found$/,
    );
  });
});

describe('ModelsService resolve, list and show', () => {
  let bed: InferenceTestbed;

  beforeEach(async () => {
    bed = await createInferenceTestbed();
  });

  afterEach(() => bed.close());

  it('resolves names case-insensitively', async () => {
    await bed.createModel('Tiny:Q4');
    const model = await bed.models.resolve('tiny:q4');
    assert.equal(model.shortName, 'Tiny:Q4');
    await rejectsWith(bed.models.resolve('nope'), ModelNotFoundError, "model 'nope' not found");
    await rejectsWith(bed.models.resolve('bad name'), InvalidRequestError, 'invalid model name');
  });

  it('lists models newest first with sizes, digests and details', async () => {
    await bed.createModel('older');
    await bed.createModel('newer', 'SYSTEM x');
    const old = await bed.store.readManifest(ModelName.parse('older')!);
    await utimes(old!.path, new Date('2020-01-01T00:00:00Z'), new Date('2020-01-01T00:00:00Z'));
    const list = await bed.models.list();
    assert.deepEqual(
      list.map((m) => m.name),
      ['newer:latest', 'older:latest'],
    );
    const newer = await bed.store.readManifest(ModelName.parse('newer')!);
    const expectedSize = newer!.manifest.layers.reduce((s, l) => s + l.size, newer!.manifest.config.size);
    assert.equal(list[0].size, expectedSize);
    assert.equal(
      list[0].digest,
      createHash('sha256')
        .update(await readFile(newer!.path))
        .digest('hex'),
    );
    assert.equal(list[1].modifiedAt.toISOString(), '2020-01-01T00:00:00.000Z');
    assert.deepEqual(list[0].details, {
      parent_model: '',
      format: 'gguf',
      family: 'llama',
      families: ['llama'],
      parameter_size: '4.39M',
      quantization_level: 'F16',
    });
  });

  it('lists nothing for an empty store', async () => {
    assert.deepEqual(await bed.models.list(), []);
  });

  it('shows GGUF metadata without general.name and the chat template, long arrays emptied unless verbose', async () => {
    const tokens = Array.from({ length: 10 }, (_, i) => `t${i}`);
    await bed.createModel('shown', '', { chatTemplate: 'TPL', tokens });
    const brief = await bed.models.show('shown', false);
    assert.equal(brief.modelInfo['general.architecture'], 'llama');
    assert.equal(brief.modelInfo['general.parameter_count'], 4_390_000);
    assert.equal('general.name' in brief.modelInfo, false);
    assert.equal('tokenizer.chat_template' in brief.modelInfo, false);
    assert.deepEqual(brief.modelInfo['tokenizer.ggml.tokens'], []);
    assert.deepEqual(brief.tensors, [{ name: 'token_embd.weight', type: 'F32', shape: [32] }]);
    const verbose = await bed.models.show('shown', true);
    assert.deepEqual(verbose.modelInfo['tokenizer.ggml.tokens'], tokens);
    await rejectsWith(bed.models.show('', false), InvalidRequestError, 'model is required');
    await rejectsWith(bed.models.show('missing', false), ModelNotFoundError, "model 'missing:latest' not found");
  });

  it('derives capabilities from the GGUF and templates', async () => {
    await bed.createModel('chat', '', { chatTemplate: '{% if tools %}…{% endif %}<think></think>' });
    await bed.createModel('embed', '', { architecture: 'bert', poolingType: 1 });
    await bed.createModel('fim', 'TEMPLATE {{ .Prompt }}{{ .Suffix }}');
    assert.deepEqual((await bed.models.resolve('chat')).capabilities, ['completion', 'tools', 'thinking']);
    assert.deepEqual((await bed.models.resolve('embed')).capabilities, ['embedding']);
    assert.deepEqual((await bed.models.resolve('fim')).capabilities, ['completion', 'insert']);
  });

  it('maps a config to details', () => {
    assert.deepEqual(
      ModelsService.details({
        model_format: 'gguf',
        model_family: 'qwen2',
        model_families: null,
        model_type: '7.6B',
        file_type: 'Q4_K_M',
        architecture: 'amd64',
        os: 'linux',
      }),
      {
        parent_model: '',
        format: 'gguf',
        family: 'qwen2',
        families: null,
        parameter_size: '7.6B',
        quantization_level: 'Q4_K_M',
      },
    );
  });
});
