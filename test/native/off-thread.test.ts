// Heavy native work off the JS thread: Context.create, the *Async model calls, media preparation and embed cancel.
// Every assertion is on a mechanism (a promise that settles after a loop turn, a dispose ordered after a job, a
// state in stats()) or on equality with the synchronous result, never on wall time.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeEvent, NativeModel } from '../../binding';
import { MODELS_DIR, TINY_BERT, TINY_LLAMA_SPM, TINY_MMPROJ, TINY_QWEN2, ensureTestModels } from '../utils/models';
import { testPng } from '../utils/png';
import { GREEDY, assertRejectsCode, binding, loadModel, runTask } from './native-helpers';

ensureTestModels();

const MARKER = '<__media__>';
const TINY_LLAMA_SPM_LORA = join(MODELS_DIR, 'tiny-llama-spm-lora.gguf');

/** Resolves with the first final event (done/error) of a submitted task. */
function finalEvent(ctx: NativeContext, task: Parameters<NativeContext['submit']>[0]): Promise<NativeEvent> {
  return new Promise((resolve) => {
    ctx.submit(task, (event) => {
      if (event.type !== 'token') resolve(event);
    });
  });
}

describe('Context.create (libuv pool)', () => {
  let model: NativeModel;

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
  });

  after(async () => {
    await model?.dispose();
  });

  it('returns a promise and resolves with a context equal to one from new Context', async () => {
    // That the work is not done inside the call is shown below: a dispose() issued right after create() wins.
    const pending = binding.Context.create(model, { nCtx: 8 * 256, nParallel: 8, nThreads: 2 });
    assert.ok(pending instanceof Promise);
    const ctx = await pending;
    const sync = new binding.Context(model, { nCtx: 8 * 256, nParallel: 8, nThreads: 2 });
    try {
      assert.deepEqual(ctx.stats(), sync.stats());
      const prompt = model.tokenize('Once upon a time', true, false);
      const a = await runTask(ctx, { tokens: prompt, nPredict: 8 });
      const b = await runTask(sync, { tokens: prompt, nPredict: 8 });
      assert.deepEqual(a.tokens, b.tokens);
    } finally {
      await ctx.dispose();
      await sync.dispose();
    }
  });

  it('loads LoRA adapters off the JS thread and applies projectors like new Context', async () => {
    const prompt = model.tokenize('The quick brown fox', true, false);
    const params = { nCtx: 256, nThreads: 2 };
    await Promise.all([model.loadLora(TINY_LLAMA_SPM_LORA), model.loadLora(TINY_LLAMA_SPM_LORA)]);
    const loras = [{ path: TINY_LLAMA_SPM_LORA }];
    const [a, b] = await Promise.all([binding.Context.create(model, params), binding.Context.create(model, params)]);
    const sync = new binding.Context(model, params);
    try {
      const ra = await runTask(a, { tokens: prompt, nPredict: 8, loras });
      const rb = await runTask(b, { tokens: prompt, nPredict: 8, loras });
      const rs = await runTask(sync, { tokens: prompt, nPredict: 8, loras });
      assert.deepEqual(ra.tokens, rs.tokens);
      assert.deepEqual(rb.tokens, rs.tokens);
    } finally {
      await Promise.all([a.dispose(), b.dispose(), sync.dispose()]);
    }
    const vision = await binding.Context.create(model, { nCtx: 256, nThreads: 2, projectorPath: TINY_MMPROJ });
    try {
      const r = await runTask(vision, {
        tokens: new Int32Array(0),
        prompt: `${MARKER} hi`,
        images: [new Uint8Array(testPng())],
        nPredict: 2,
      });
      assert.equal(r.tokens.length, 2);
    } finally {
      await vision.dispose();
    }
  });

  it('rejects (never throws) with the codes of new Context', async () => {
    await assertRejectsCode(binding.Context.create({} as NativeModel, { nCtx: 64 }), 'LLAMA_INVALID_ARGUMENT');
    await assertRejectsCode(binding.Context.create(model, { nCtx: 1, nParallel: 2 }), 'LLAMA_INVALID_ARGUMENT');
    await assertRejectsCode(
      binding.Context.create(model, { nCtx: 64, projectorPath: `${TINY_MMPROJ}.missing` }),
      'LLAMA_MODEL_LOAD_FAILED',
    );
    await assertRejectsCode(model.loadLora(`${TINY_LLAMA_SPM_LORA}.missing`), 'LLAMA_MODEL_LOAD_FAILED');
  });

  it('a model disposed while a context is created: the creation rejects LLAMA_DISPOSED, then the model is freed', async () => {
    const other = await loadModel(TINY_LLAMA_SPM);
    const order: string[] = [];
    const creating = binding.Context.create(other, { nCtx: 8 * 256, nParallel: 8, nThreads: 2 }).then(
      () => order.push('created'),
      (err: { code?: string }) => order.push(`create rejected ${err.code}`),
    );
    const disposing = other.dispose().then(() => order.push('disposed'));
    await Promise.all([creating, disposing]);
    assert.deepEqual(order, ['create rejected LLAMA_DISPOSED', 'disposed']);
    await assertRejectsCode(binding.Context.create(other, { nCtx: 64 }), 'LLAMA_DISPOSED');
  });
});

describe('async tokenizer and templates (libuv pool)', () => {
  let model: NativeModel;

  before(async () => {
    model = await loadModel(TINY_QWEN2);
  });

  after(async () => {
    await model?.dispose();
  });

  it('tokenizeAsync / detokenizeAsync equal the synchronous calls, also for a large text', async () => {
    const text = `<|im_start|>user\n${'Hello wörld, tokenizers! '.repeat(4000)}<|im_end|>`;
    for (const [addSpecial, parseSpecial] of [
      [true, true],
      [false, false],
    ] as const) {
      const pending = model.tokenizeAsync(text, addSpecial, parseSpecial);
      assert.ok(pending instanceof Promise);
      const tokens = await pending;
      assert.deepEqual(tokens, model.tokenize(text, addSpecial, parseSpecial));
      assert.equal(await model.detokenizeAsync(tokens, false, true), model.detokenize(tokens, false, true));
    }
  });

  it('renderChatAsync and applyChatTemplateAsync equal renderChat and applyChatTemplate', async () => {
    const request = {
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'What is the weather?' },
      ],
      tools: [
        {
          name: 'get_weather',
          description: 'Weather of a city',
          parameters: JSON.stringify({ type: 'object', properties: { city: { type: 'string' } } }),
        },
      ],
    };
    const sync = model.renderChat(request);
    const concurrent = await Promise.all([model.renderChatAsync(request), model.renderChatAsync(request)]);
    for (const r of concurrent) {
      const { parser: _p, ...rest } = r;
      const { parser: _q, ...expected } = sync;
      assert.deepEqual(rest, expected);
      assert.deepEqual(r.parser.parse('Sunny.', false), sync.parser.parse('Sunny.', false));
    }
    const messages = [{ role: 'user', content: 'hi' }];
    assert.equal(await model.applyChatTemplateAsync(messages), model.applyChatTemplate(messages));
  });

  it('errors reject with the codes of the synchronous calls', async () => {
    await assertRejectsCode(model.detokenizeAsync(new Int32Array([-1])), 'LLAMA_INVALID_ARGUMENT');
    await assertRejectsCode(
      model.renderChatAsync({ messages: [{ role: 'user', content: 'x' }], jsonSchema: '{not json' }),
      'LLAMA_INVALID_ARGUMENT',
    );
    await assertRejectsCode(
      model.renderChatAsync({ messages: [{ role: 'user', content: 'x' }], template: '{% if %}' }),
      'LLAMA_TEMPLATE_FAILED',
    );
    await assertRejectsCode(model.tokenizeAsync(5 as unknown as string, true, true), 'LLAMA_INVALID_ARGUMENT');
  });

  it('dispose() waits for a job in flight; later calls reject LLAMA_DISPOSED', async () => {
    const other = await loadModel(TINY_QWEN2);
    const order: string[] = [];
    const tokenizing = other
      .tokenizeAsync('hello '.repeat(20000), true, true)
      .then((t) => order.push(`tokens ${t.length > 0}`));
    const disposing = other.dispose().then(() => order.push('disposed'));
    await Promise.all([tokenizing, disposing]);
    assert.deepEqual(order, ['tokens true', 'disposed']);
    await assertRejectsCode(other.tokenizeAsync('x', true, true), 'LLAMA_DISPOSED');
    await assertRejectsCode(other.renderChatAsync({ messages: [] }), 'LLAMA_DISPOSED');
  });
});

describe('media preparation on the media thread', () => {
  let model: NativeModel;
  let ctx: NativeContext;

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    ctx = new binding.Context(model, { nCtx: 512, nParallel: 2, nThreads: 2, projectorPath: TINY_MMPROJ });
  });

  after(async () => {
    await ctx?.dispose();
    await model?.dispose();
  });

  it('submit returns an id at once; a preparation error is the task error event', async () => {
    const task = { tokens: new Int32Array(0), nPredict: 4, sampling: GREEDY };
    const bad = await finalEvent(ctx, { ...task, prompt: `${MARKER} hi`, images: [new Uint8Array([1, 2, 3])] });
    assert.equal(bad.type, 'error');
    assert.equal(bad.type === 'error' && bad.code, 'LLAMA_INVALID_ARGUMENT');
    assert.match(bad.type === 'error' ? bad.message : '', /images\[0\] is not a decodable image/);
    const long = await finalEvent(ctx, {
      ...task,
      prompt: `${MARKER} ${'word '.repeat(400)}`,
      images: [new Uint8Array(testPng())],
    });
    assert.equal(long.type === 'error' && long.code, 'LLAMA_EXCEED_CONTEXT');
    assert.deepEqual([ctx.stats().activeSlots, ctx.stats().queuedTasks], [0, 0]);
  });

  it('a task cancelled while its image is prepared ends cancelled', async () => {
    const done = new Promise<NativeEvent>((resolve) => {
      const id = ctx.submit(
        {
          tokens: new Int32Array(0),
          prompt: `${MARKER} hi`,
          images: [new Uint8Array(testPng())],
          nPredict: 64,
          sampling: GREEDY,
        },
        (event) => {
          if (event.type !== 'token') resolve(event);
        },
      );
      ctx.cancel(id);
    });
    const event = await done;
    assert.equal(event.type, 'done');
    assert.equal(event.type === 'done' && event.reason, 'cancelled');
  });
});

describe('embed cancellation', () => {
  let model: NativeModel;
  let ctx: NativeContext;

  before(async () => {
    model = await loadModel(TINY_BERT);
    ctx = new binding.Context(model, { nCtx: 512, nBatch: 512, nParallel: 1, embeddings: true, nThreads: 2 });
  });

  after(async () => {
    await ctx?.dispose();
    await model?.dispose();
  });

  it('cancel(jobId) rejects embed() with LLAMA_CANCELLED and frees the engine; the next embed works', async () => {
    const input = model.tokenize('a sentence to embed again and again', true, true);
    const inputs = Array.from({ length: 4000 }, () => input);
    let jobId = -1;
    const pending = ctx.embed(inputs, (id) => {
      jobId = id;
    });
    assert.ok(jobId > 0, 'onJobId was called before embed() returned');
    assert.equal(ctx.stats().embedJobs, 1);
    ctx.cancel(jobId);
    await assertRejectsCode(pending, 'LLAMA_CANCELLED');
    assert.equal(ctx.stats().embedJobs, 0);
    const [vector] = await ctx.embed([input]);
    assert.equal(vector.length, model.info().nEmbd);
    ctx.cancel(jobId); // a finished id is ignored
  });

  it('onJobId must be a function', async () => {
    await assertRejectsCode(ctx.embed([new Int32Array([1])], 5 as unknown as () => void), 'LLAMA_INVALID_ARGUMENT');
  });
});
