// Model: load with progress, abortLoad, load failures, info/metadata, chat templates, dispose.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TINY_LLAMA_SPM, TINY_QWEN2, ensureTestModels } from '../utils/models';
import { assertRejectsCode, assertThrowsCode, binding, loadModel } from './native-helpers';

ensureTestModels();

describe('Model.load', () => {
  it('reports progress in [0, 1] before the promise settles', async () => {
    const model = new binding.Model(TINY_LLAMA_SPM);
    assert.equal(model.loaded, false);
    const progress: number[] = [];
    await model.load((p) => progress.push(p));
    const seenAtResolve = progress.length;
    assert.ok(seenAtResolve > 0, 'progress events arrive before load() resolves');
    assert.ok(progress.every((p) => p >= 0 && p <= 1));
    assert.deepEqual(
      progress,
      [...progress].sort((a, b) => a - b),
      'non-decreasing',
    );
    assert.equal(progress.at(-1), 1);
    assert.equal(model.loaded, true);
    await assertRejectsCode(
      Promise.resolve().then(() => model.load()),
      'LLAMA_INVALID_ARGUMENT',
    );
    await model.dispose();
    assert.equal(model.loaded, false);
  });

  it('abortLoad() rejects the load with LLAMA_CANCELLED and a later load works', async () => {
    const model = new binding.Model(TINY_QWEN2);
    const pending = model.load();
    model.abortLoad();
    await assertRejectsCode(pending, 'LLAMA_CANCELLED');
    assert.equal(model.loaded, false);
    model.abortLoad(); // no-op when nothing loads
    await model.load();
    assert.equal(model.loaded, true);
    await model.dispose();
  });

  it('a missing or invalid file rejects with LLAMA_MODEL_LOAD_FAILED and the process keeps running', async () => {
    await assertRejectsCode(new binding.Model('/nonexistent/model.gguf').load(), 'LLAMA_MODEL_LOAD_FAILED');
    await assertRejectsCode(new binding.Model(__filename).load(), 'LLAMA_MODEL_LOAD_FAILED');
    const model = await loadModel(TINY_LLAMA_SPM);
    assert.ok(model.tokenize('still alive', true, false).length > 0);
    await model.dispose();
  });

  it('dispose() during load rejects the load and resolves', async () => {
    const model = new binding.Model(TINY_QWEN2);
    const pending = model.load();
    const disposed = model.dispose();
    await assertRejectsCode(pending, 'LLAMA_CANCELLED');
    await disposed;
    assertThrowsCode(() => model.info(), 'LLAMA_DISPOSED');
  });

  it('methods before load() throw LLAMA_INVALID_ARGUMENT', () => {
    const model = new binding.Model(TINY_LLAMA_SPM);
    assertThrowsCode(() => model.info(), 'LLAMA_INVALID_ARGUMENT');
    assertThrowsCode(() => model.tokenize('x', false, false), 'LLAMA_INVALID_ARGUMENT');
  });
});

describe('Model introspection', () => {
  it('info() and metadata() describe the tiny llama', async () => {
    const model = await loadModel(TINY_LLAMA_SPM);
    const info = model.info();
    assert.equal(info.nEmbd, 128);
    assert.equal(info.nLayer, 2);
    assert.equal(info.nHead, 4);
    assert.equal(info.nVocab, 32000);
    assert.equal(info.bos, 1);
    assert.equal(info.eos, 2);
    assert.equal(info.addBos, true);
    assert.equal(info.hasDecoder, true);
    assert.ok(info.nParams > 4_000_000);
    assert.ok(info.size > 8_000_000);
    assert.ok(info.nCtxTrain > 0);
    assert.match(info.description, /llama/);
    const meta = model.metadata();
    assert.equal(meta['general.architecture'], 'llama');
    assert.equal(meta['llama.embedding_length'], '128');
    assert.equal(meta['tokenizer.ggml.model'], 'llama');
    await model.dispose();
  });

  it('tokenize/detokenize round trip', async () => {
    const model = await loadModel(TINY_LLAMA_SPM);
    const text = 'Once upon a time, 🦙 lived in Perú.';
    const tokens = model.tokenize(text, true, false);
    assert.equal(tokens[0], 1);
    assert.equal(model.detokenize(tokens.subarray(1)), text);
    // llama.cpp keeps SPM's prefix space when it drops a leading BOS.
    assert.equal(model.detokenize(tokens, true, false), ' ' + text);
    assert.equal(model.detokenize(tokens, false, true), '<s> ' + text);
    const special = model.tokenize('[INST] hi', true, true);
    assert.ok(special.length > 2);
    await model.dispose();
  });
});

describe('Model chat templates', () => {
  it('renders the llama-2 [INST] template of the tiny SPM llama', async () => {
    const model = await loadModel(TINY_LLAMA_SPM);
    assert.match(model.chatTemplate() ?? '', /\[INST\]/);
    // BOS is added by tokenize(addSpecial=true), so it is not repeated in the text.
    assert.equal(model.applyChatTemplate([{ role: 'user', content: 'Hello' }]), '[INST] Hello [/INST]');
    const sys = model.applyChatTemplate([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
    ]);
    assert.equal(sys, '[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]');
    await model.dispose();
  });

  it('renders ChatML for the tiny qwen2 model', async () => {
    const model = await loadModel(TINY_QWEN2);
    assert.match(model.chatTemplate() ?? '', /im_start/);
    const messages = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Hi' },
    ];
    assert.equal(
      model.applyChatTemplate(messages),
      '<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
    );
    assert.equal(
      model.applyChatTemplate(messages, { addGenerationPrompt: false }),
      '<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n',
    );
    const custom = model.applyChatTemplate(messages, {
      template: '{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}',
      addGenerationPrompt: false,
    });
    assert.equal(custom, '<system>You are terse.<user>Hi');
    await model.dispose();
  });

  it('a broken template throws LLAMA_TEMPLATE_FAILED', async () => {
    const model = await loadModel(TINY_QWEN2);
    assertThrowsCode(
      () => model.applyChatTemplate([{ role: 'user', content: 'x' }], { template: '{% for %}' }),
      'LLAMA_TEMPLATE_FAILED',
    );
    assertThrowsCode(
      () => model.applyChatTemplate([{ role: 'user', content: 'x' }], { template: "{{ raise_exception('no') }}" }),
      'LLAMA_TEMPLATE_FAILED',
    );
    assertThrowsCode(() => model.applyChatTemplate('x' as never), 'LLAMA_INVALID_ARGUMENT');
    await model.dispose();
  });
});

describe('Model.dispose', () => {
  it('is idempotent and later calls throw LLAMA_DISPOSED', async () => {
    const model = await loadModel(TINY_LLAMA_SPM);
    await Promise.all([model.dispose(), model.dispose()]);
    await model.dispose();
    assert.equal(model.loaded, false);
    assertThrowsCode(() => model.info(), 'LLAMA_DISPOSED');
    assertThrowsCode(() => model.tokenize('x', false, false), 'LLAMA_DISPOSED');
    assertThrowsCode(() => model.metadata(), 'LLAMA_DISPOSED');
    assertThrowsCode(() => model.load(), 'LLAMA_DISPOSED');
    assertThrowsCode(() => new binding.Context(model, { nCtx: 128 }), 'LLAMA_DISPOSED');
  });

  it('disposes its contexts first', async () => {
    const model = await loadModel(TINY_LLAMA_SPM);
    const ctx = new binding.Context(model, { nCtx: 256, nThreads: 2 });
    assert.equal(ctx.stats().nParallel, 1);
    await model.dispose();
    assertThrowsCode(() => ctx.stats(), 'LLAMA_DISPOSED');
    await ctx.dispose(); // already disposed: resolves
  });
});
