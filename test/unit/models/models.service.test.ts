import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import { InvalidRequestError, ModelNotFoundError } from '../../../src/common/errors';
import { MediaType } from '../../../src/models/manifest';
import { ModelName } from '../../../src/models/model-name';
import { ModelsService, NOT_GGUF_MESSAGE } from '../../../src/models/models.service';
import {
  goTemplateCapabilities,
  hasTemplateLibrary,
  jinjaTemplateCapabilities,
} from '../../../src/models/template-support';
import { REPO_ROOT } from '../../../src/config';
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
      'ADAPTER file "./a.gguf" does not exist',
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

describe('ModelsService copy, delete, prune and autodetection', () => {
  let bed: InferenceTestbed;

  beforeEach(async () => {
    bed = await createInferenceTestbed();
  });

  afterEach(() => bed.close());

  const blobs = async () =>
    (await readdir(join(bed.config.modelsDir, 'blobs'))).filter((f) => !f.startsWith('.')).sort();
  const names = async () => (await bed.models.list()).map((m) => m.name).sort();

  it('copies a manifest byte for byte (same digest, blobs shared), case-insensitively', async () => {
    await bed.createModel('Orig', 'SYSTEM hi');
    const before = await blobs();
    await bed.models.copy('orig', 'ns/copy:v2');
    assert.deepEqual(await names(), ['Orig:latest', 'ns/copy:v2']);
    const [a, b] = [await bed.models.resolve('orig'), await bed.models.resolve('ns/copy:v2')];
    assert.equal(a.manifestDigest, b.manifestDigest);
    assert.deepEqual(await blobs(), before, 'no blob is written or removed');
    await bed.models.copy('orig', 'ORIG');
    assert.deepEqual(await names(), ['Orig:latest', 'ns/copy:v2'], 'copy onto itself is a no-op');
  });

  it('copy over an existing model replaces it and prunes the blobs only it used', async () => {
    await bed.createModel('src', 'SYSTEM src');
    await bed.createModel('dst', 'SYSTEM dst');
    const dst = await bed.models.resolve('dst');
    await bed.models.copy('src', 'DST');
    assert.equal((await bed.models.resolve('dst')).system, 'src');
    const dstSystem = dst.manifest.layers.find((l) => l.mediaType === MediaType.SYSTEM)?.digest ?? '';
    assert.equal(await bed.store.blobSize(dstSystem), null, 'the old system layer was used by dst only');
    assert.notEqual(await bed.store.blobSize(dst.modelDigest), null, 'the shared weights stay');
    assert.equal((await bed.models.resolve('dst')).name.toShortString(), 'dst:latest', 'on-disk case kept');
  });

  it('rejects bad copies with Ollama’s texts and touches nothing', async () => {
    await bed.createModel('orig');
    const before = await blobs();
    await rejectsWith(bed.models.copy('', 'x'), InvalidRequestError, 'source "" is invalid');
    await rejectsWith(bed.models.copy('bad name', 'x'), InvalidRequestError, 'source "bad name" is invalid');
    await rejectsWith(bed.models.copy('orig', 'a/b/c/d/e'), InvalidRequestError, 'destination "a/b/c/d/e" is invalid');
    await rejectsWith(bed.models.copy('missing', 'x'), ModelNotFoundError, 'model "missing" not found');
    assert.deepEqual(await names(), ['orig:latest']);
    assert.deepEqual(await blobs(), before);
  });

  it('deletes a manifest, prunes empty dirs and unshared blobs, keeps shared ones; emits the deletion', async () => {
    await bed.createModel('ns/orig:v1', 'SYSTEM only mine');
    await bed.models.copy('ns/orig:v1', 'other');
    const all = await blobs();
    const deleted: string[] = [];
    bed.models.deleted$.subscribe((d) => deleted.push(d.name));
    await bed.models.delete('NS/ORIG:V1');
    assert.deepEqual(await names(), ['other:latest']);
    assert.deepEqual(await blobs(), all, 'every blob is still used by the copy');
    await assert.rejects(stat(join(bed.config.modelsDir, 'manifests', 'registry.ollama.ai', 'ns')), { code: 'ENOENT' });
    const weights = (await bed.models.resolve('other')).modelPath;
    await bed.models.delete('other');
    assert.deepEqual(await names(), []);
    assert.deepEqual(await blobs(), [], 'the last user takes every blob with it');
    assert.deepEqual(await readdir(join(bed.config.modelsDir, 'manifests')), []);
    assert.deepEqual(deleted, ['ns/orig:v1', 'other:latest']);
    assert.ok(weights.endsWith(all.find((b) => weights.endsWith(b)) ?? '\0'));
  });

  it('keeps blobs another model shares when deleting', async () => {
    await bed.createModel('base', 'SYSTEM base');
    await bed.models
      .create(await bed.models.prepareCreate({ model: 'child', modelfile: 'FROM base\nSYSTEM child' }))
      .forEach(() => undefined);
    const child = await bed.models.resolve('child');
    await bed.models.delete('base');
    for (const layer of child.manifest.layers) {
      assert.notEqual(await bed.store.blobSize(layer.digest), null, `${layer.mediaType} kept`);
    }
    assert.equal((await bed.models.resolve('child')).system, 'child');
  });

  it('rejects bad deletes with Ollama’s texts and touches nothing', async () => {
    await bed.createModel('keep');
    const before = await blobs();
    await rejectsWith(bed.models.delete(''), InvalidRequestError, 'model is required');
    await rejectsWith(bed.models.delete('bad name'), InvalidRequestError, 'name "bad name" is invalid');
    await rejectsWith(bed.models.delete('missing'), ModelNotFoundError, "model 'missing' not found");
    assert.deepEqual(await names(), ['keep:latest']);
    assert.deepEqual(await blobs(), before);
  });

  it('never prunes while some manifest cannot be read', async () => {
    await bed.createModel('a', 'SYSTEM a');
    await bed.models.copy('a', 'b');
    const broken = join(bed.config.modelsDir, 'manifests', 'registry.ollama.ai', 'library', 'broken');
    await mkdir(broken, { recursive: true });
    await writeFile(join(broken, 'latest'), 'not json');
    const before = await blobs();
    await bed.models.delete('a');
    await bed.models.delete('b');
    assert.deepEqual(await blobs(), before);
  });

  it('prunes the layers a re-create leaves unreferenced', async () => {
    await bed.createModel('m', 'SYSTEM first');
    const first = await bed.models.resolve('m');
    const systemDigest = first.manifest.layers.find((l) => l.mediaType === MediaType.SYSTEM)?.digest ?? '';
    await bed.models
      .create(await bed.models.prepareCreate({ model: 'm', from: 'm', system: 'second' }))
      .forEach(() => undefined);
    assert.equal((await bed.models.resolve('m')).system, 'second');
    assert.equal(await bed.store.blobSize(systemDigest), null);
    assert.notEqual(await bed.store.blobSize(first.modelDigest), null);
  });

  it('finds the model of a loaded weights blob for /api/ps', async () => {
    await bed.createModel('psmodel');
    const m = await bed.models.resolve('psmodel');
    const found = await bed.models.findByWeights(m.modelPath);
    assert.equal(found?.name, 'psmodel:latest');
    assert.equal(found?.digest, m.manifestDigest);
    assert.equal(found?.details.format, 'gguf');
    assert.equal(await bed.models.findByWeights('/nowhere'), null);
  });

  it('lists capabilities in /api/tags entries', async () => {
    await bed.createModel('embed', '', { architecture: 'bert', poolingType: 1 });
    await bed.createModel('tools', '', { chatTemplate: '{% if tools %}{% endif %}' });
    const list = await bed.models.list();
    assert.deepEqual(list.find((m) => m.name === 'embed:latest')?.capabilities, ['embedding']);
    assert.deepEqual(list.find((m) => m.name === 'tools:latest')?.capabilities, ['completion', 'tools']);
  });

  it('autodetects a bundled template from the GGUF chat template on create (§8.3)', async (t) => {
    if (!hasTemplateLibrary()) {
      t.skip('assets/ollama-templates is not installed');
      return;
    }
    const index = JSON.parse(
      await readFile(join(REPO_ROOT, 'assets', 'ollama-templates', 'index.json'), 'utf8'),
    ) as Array<{ name: string; template: string }>;
    const chatml = index.find((e) => e.name === 'chatml')?.template ?? '';
    await bed.createModel('auto', 'PARAMETER temperature 0', { chatTemplate: chatml });
    const model = await bed.models.resolve('auto');
    assert.equal(
      model.template,
      await readFile(join(REPO_ROOT, 'assets', 'ollama-templates', 'chatml.gotmpl'), 'utf8'),
    );
    assert.deepEqual(model.params, { stop: ['<|im_start|>', '<|im_end|>'], temperature: 0 });
    await bed.createModel('own', 'TEMPLATE {{ .Prompt }}\nPARAMETER stop X', { chatTemplate: chatml });
    const own = await bed.models.resolve('own');
    assert.equal(own.template, '{{ .Prompt }}', 'a Modelfile TEMPLATE wins');
    assert.deepEqual(own.params, { stop: ['X'] });
    await bed.createModel('unknown', '', { chatTemplate: '{{ something else entirely }}' });
    assert.equal((await bed.models.resolve('unknown')).template, undefined);
  });
});

describe('template support', () => {
  it('sniffs Go and Jinja capabilities', () => {
    assert.deepEqual(
      goTemplateCapabilities(
        '{{ if .Tools }}{{ end }}{{ .Suffix }}{{ range .Messages }}{{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}{{ .Content }}{{ end }}',
      ),
      {
        tools: true,
        insert: true,
        thinking: true,
      },
    );
    assert.deepEqual(goTemplateCapabilities('{{ .Prompt }}'), { tools: false, insert: false, thinking: false });
    assert.deepEqual(goTemplateCapabilities('{{ if .Tools }}'), { tools: false, insert: false, thinking: false });
    assert.deepEqual(jinjaTemplateCapabilities("{{ content.split('</think>') }}"), { tools: false, thinking: true });
    assert.deepEqual(jinjaTemplateCapabilities('{% if tool_calls %}'), { tools: true, thinking: false });
  });
});
