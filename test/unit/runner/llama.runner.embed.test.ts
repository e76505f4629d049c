import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { ContextLengthExceededError, InvalidRequestError } from '../../../src/common/errors';
import { physicalCores } from '../../../src/runner/cpu-threads';
import { LlamaRunner } from '../../../src/runner/llama.runner';
import { FakeBinding } from '../../utils/fake-binding';
import { spec } from '../../utils/fake-runner';

describe('LlamaRunner embeddings, grammar, render', () => {
  let binding: FakeBinding;

  beforeEach(() => {
    binding = new FakeBinding();
  });

  it('an embedding model gets an embedding context (batch = ubatch ≥ num_ctx) and embeds in one call', async () => {
    binding.poolingType = 1;
    const runner = await LlamaRunner.load(
      binding,
      spec({ numCtx: 1024, numParallel: 2, numBatch: 512, cacheRamBytes: 2 ** 20 }),
    );
    assert.equal(runner.info.embeddingModel, true);
    const { nThreads, nThreadsMax, ...rest } = binding.contextParams[0];
    assert.deepEqual(rest, { nCtx: 2048, nBatch: 1024, nUbatch: 1024, nParallel: 2, embeddings: true });
    assert.equal(nThreads, physicalCores(), 'automatic threads: the physical cores');
    assert.equal(nThreadsMax, physicalCores());
    const vectors = await runner.embed([[1, 2], [3]]);
    assert.equal(vectors.length, 2);
    assert.equal(binding.embedCalls.length, 1);
    assert.deepEqual(await runner.embed([]), []);
    await runner.close();
    assert.equal(binding.contexts.length, 1);
    assert.equal(binding.contexts[0].disposed, true);
  });

  it('a generation model creates a second (embedding) context once and disposes both on close', async () => {
    const runner = await LlamaRunner.load(binding, spec());
    await Promise.all([runner.embed([[5]]), runner.embed([[6]])]);
    assert.equal(binding.contexts.length, 2, 'created once even for concurrent calls');
    assert.equal(binding.contextParams[1].embeddings, true);
    await runner.close();
    assert.ok(binding.contexts.every((c) => c.disposed));
    assert.equal(binding.models[0].disposed, true);
  });

  it('maps native embed errors to domain errors', async () => {
    const runner = await LlamaRunner.load(binding, spec({ numCtx: 8 }));
    await assert.rejects(runner.embed([Array.from({ length: 20 }, () => 7)]), ContextLengthExceededError);
    await assert.rejects(runner.embed([[]]), InvalidRequestError);
    await runner.close();
  });

  it('maps jsonSchemaToGrammar errors and exposes the template’s capabilities', async () => {
    const runner = await LlamaRunner.load(binding, spec());
    await assert.rejects(runner.jsonSchemaToGrammar('{nope'), InvalidRequestError);
    assert.equal(await runner.jsonSchemaToGrammar('{"type":"object"}'), 'root ::= {"type":"object"}');
    binding.chat.thinking = true;
    assert.deepEqual(runner.chatCapabilities(), { tools: true, thinking: true });
    await runner.close();
    binding.hasChatTemplate = false;
    const bare = await LlamaRunner.load(binding, spec());
    assert.deepEqual(bare.chatCapabilities(), { tools: false, thinking: false });
    await bare.close();
  });
});
