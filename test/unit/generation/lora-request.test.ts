import assert from 'node:assert/strict';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import { InvalidRequestError, ModelNotFoundError } from '../../../src/common/errors';
import { ChatCommand, GenerateCommand } from '../../../src/generation/generation.types';
import { RequestContext, requestContextStorage } from '../../../src/observability/request-context';
import { FakeRunnerFactory } from '../../utils/fake-runner';
import { writeTinyGguf } from '../../utils/gguf-fixtures';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

const generate = (model: string, overrides: Partial<GenerateCommand> = {}): GenerateCommand => ({
  model,
  prompt: 'Hi',
  raw: false,
  options: {},
  startedAt: process.hrtime.bigint(),
  ...overrides,
});

const chat = (model: string, overrides: Partial<ChatCommand> = {}): ChatCommand => ({
  model,
  messages: [{ role: 'user', content: 'Hi' }],
  options: {},
  startedAt: process.hrtime.bigint(),
  ...overrides,
});

/** Per-request LoRA through GenerateService / ChatService / CompletionService to the runner's requests. */
describe('per-request lora (generation services)', () => {
  let bed: InferenceTestbed;
  let factory: FakeRunnerFactory;
  /** Adapter blob paths of ft1 and ft2. */
  let lora1: string;
  let lora2: string;

  beforeEach(async () => {
    factory = new FakeRunnerFactory();
    bed = await createInferenceTestbed({ runnerFactory: factory, config: { maxLoras: 7 } });
    await bed.createModel('tiny');
    await bed.createModel('other', '', { chatTemplate: '{{ chatml }}', contextLength: 4096 });
    for (const [name, file] of [
      ['ft1', 'lora1.gguf'],
      ['ft2', 'lora2.gguf'],
      ['ft9', 'lora9.gguf'],
    ]) {
      // GGUF-shaped stand-ins for LoRA adapters: the fake runner never reads them.
      const path = join(bed.dir, file);
      await writeTinyGguf(path, { architecture: `lora-${name}` });
      const base = name === 'ft9' ? 'other' : 'tiny';
      const plan = await bed.models.prepareCreate({ model: name, modelfile: `FROM ${base}\nADAPTER ${path}` });
      await lastValueFrom(bed.models.create(plan).pipe(toArray()));
    }
    lora1 = (await bed.models.resolve('ft1')).adapterPaths[0];
    lora2 = (await bed.models.resolve('ft2')).adapterPaths[0];
  });

  afterEach(() => bed.close());

  const runGenerate = (cmd: GenerateCommand) => lastValueFrom(bed.generate.generate(cmd).pipe(toArray()));
  const runChat = (cmd: ChatCommand) => lastValueFrom(bed.chat.chat(cmd).pipe(toArray()));
  /** Every runner request so far, in order, over all runners. */
  const requests = () => factory.created.flatMap((r) => r.requests);

  it('runs a FROM base + ADAPTER model on the base weights’ runner with its adapter at scale 1', async () => {
    await runGenerate(generate('tiny'));
    await runGenerate(generate('ft1'));
    await runChat(chat('ft2'));
    assert.equal(factory.created.length, 1, 'one runner for the three names');
    assert.equal(factory.created[0].spec.maxLoras, 7, 'LLAMAD_MAX_LORAS reaches the spec');
    assert.deepEqual(
      requests().map((r) => r.loras),
      [undefined, [{ path: lora1, scale: 1, name: 'ft1:latest' }], [{ path: lora2, scale: 1, name: 'ft2:latest' }]],
    );
  });

  it('/api/ps names the shared runner after the base model, not the newer adapter models', async () => {
    const tiny = await bed.models.resolve('tiny');
    assert.equal((await bed.models.findByWeights(tiny.modelPath))?.name, 'tiny:latest');
    const other = await bed.models.resolve('other');
    assert.equal((await bed.models.findByWeights(other.modelPath))?.name, 'other:latest');
  });

  it('a lora list replaces the model’s adapters (id, name, scale 0, [])', async () => {
    await runGenerate(generate('ft1', { lora: [{ id: 0, scale: 0 }] }));
    await runGenerate(generate('ft1', { lora: [] }));
    await runGenerate(generate('tiny', { lora: [{ name: 'ft2', scale: 1 }] }));
    await runChat(chat('ft1', { lora: [{ name: 'ft2', scale: 0.5 }] }));
    await runChat(chat('ft1', { lora: [{ id: 0, scale: 2 }] }));
    assert.deepEqual(
      requests().map((r) => r.loras),
      [
        undefined,
        undefined,
        [{ path: lora2, scale: 1, name: 'ft2:latest' }],
        [{ path: lora2, scale: 0.5, name: 'ft2:latest' }],
        [{ path: lora1, scale: 2, name: 'ft1:latest' }],
      ],
    );
  });

  it('rejects a bad id and a model over other weights with 400s before loading anything', async () => {
    await assert.rejects(
      runGenerate(generate('ft1', { lora: [{ id: 3, scale: 1 }] })),
      (err: unknown) =>
        err instanceof InvalidRequestError && /^lora id 3 is out of range: ft1:latest/.test(err.message),
    );
    await assert.rejects(
      runChat(chat('tiny', { lora: [{ name: 'ft9', scale: 1 }] })),
      (err: unknown) =>
        err instanceof InvalidRequestError && err.message.startsWith('lora "ft9" is not an adapter of tiny:latest'),
    );
    await assert.rejects(runChat(chat('tiny', { lora: [{ name: 'missing', scale: 1 }] })), ModelNotFoundError);
    assert.equal(factory.created.length, 0);
  });

  it('a name outside the caller’s model list fails exactly like a missing model', async () => {
    const context = new RequestContext('r1', 'POST', '/api/generate');
    context.principal = 'key:test';
    context.policy = { role: 'user', models: ['tiny', 'ft1'] };
    const run = (name: string) =>
      requestContextStorage.run(context, () => runGenerate(generate('tiny', { lora: [{ name, scale: 1 }] })));
    const hidden = await run('ft2').then(
      () => assert.fail('ft2 is not listed'),
      (err: unknown) => err,
    );
    const missing = await run('nope').then(
      () => assert.fail('nope does not exist'),
      (err: unknown) => err,
    );
    assert.ok(hidden instanceof ModelNotFoundError && missing instanceof ModelNotFoundError);
    assert.equal(hidden.message, "model 'ft2' not found");
    assert.equal(missing.message, "model 'nope' not found");
    await run('ft1');
    assert.deepEqual(requests().at(-1)?.loras, [{ path: lora1, scale: 1, name: 'ft1:latest' }]);
  });
});
