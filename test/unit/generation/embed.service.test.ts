import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { InvalidRequestError, ModelNotFoundError } from '../../../src/common/errors';
import {
  decodeEmbedInput,
  EmbedCommand,
  INPUT_TOO_LONG_MESSAGE,
  normalizeEmbedding,
} from '../../../src/generation/embed.service';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

const command = (overrides: Partial<EmbedCommand> = {}): EmbedCommand => ({
  model: 'emb',
  input: 'hello',
  truncate: true,
  options: {},
  startedAt: process.hrtime.bigint(),
  ...overrides,
});

const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe('EmbedService (/api/embed, §3.4)', () => {
  let bed: InferenceTestbed;

  beforeEach(async () => {
    bed = await createInferenceTestbed({ config: { contextLength: 64 } });
    bed.binding.poolingType = 1;
    await bed.createModel('emb', '', { architecture: 'bert', poolingType: 1, contextLength: 512 });
    await bed.createModel('chat', '', { chatTemplate: '{{ chatml }}' });
  });

  afterEach(() => bed.close());

  it('embeds every input with ONE engine call, in order, each vector L2-normalized', async () => {
    const r = await bed.embed.embed(command({ input: ['a', 'bb', 'ccc'] }));
    assert.equal(bed.binding.embedCalls.length, 1, 'one embed() call per request');
    assert.deepEqual(
      bed.binding.embedCalls[0].map((t) => t.length),
      [2, 3, 4],
      'inputs in request order (BOS + chars)',
    );
    assert.equal(r.embeddings.length, 3);
    for (const v of r.embeddings) {
      assert.equal(v.length, 8);
      assert.ok(Math.abs(norm(v) - 1) < 1e-6);
    }
    const expected = [2, 3, 4].map((_, i) => normalizeEmbedding(bed.binding.embedVector(bed.binding.embedCalls[0][i])));
    assert.deepEqual(r.embeddings, expected);
    assert.equal(r.promptEvalCount, 9);
    assert.ok(r.totalDurationNs > 0);
  });

  it('uses the model’s own context as an embedding context (no second context)', async () => {
    await bed.embed.embed(command());
    assert.equal(bed.binding.contextParams.length, 1);
    assert.equal(bed.binding.contextParams[0].embeddings, true);
  });

  it('gives a generation model a separate embedding context on first use', async () => {
    bed.binding.poolingType = undefined;
    const r = await bed.embed.embed(command({ model: 'chat', input: 'hi' }));
    assert.equal(r.embeddings.length, 1);
    assert.deepEqual(
      bed.binding.contextParams.map((p) => p.embeddings ?? false),
      [false, true],
    );
    await bed.embed.embed(command({ model: 'chat', input: 'again' }));
    assert.equal(bed.binding.contextParams.length, 2, 'the embedding context is reused');
  });

  it('cuts to `dimensions` and re-normalizes', async () => {
    const r = await bed.embed.embed(command({ dimensions: 3 }));
    assert.equal(r.embeddings[0].length, 3);
    assert.ok(Math.abs(norm(r.embeddings[0]) - 1) < 1e-6);
  });

  it('truncates over-long inputs to the context by default, 400 with truncate:false', async () => {
    const long = 'x'.repeat(100);
    await bed.embed.embed(command({ input: long }));
    const sent = bed.binding.embedCalls[0][0];
    assert.equal(sent.length, 64, 'cut to num_ctx including BOS');
    assert.equal(sent[0], 1, 'BOS kept');
    await assert.rejects(bed.embed.embed(command({ input: long, truncate: false })), (e: unknown) => {
      assert.ok(e instanceof InvalidRequestError);
      assert.equal(e.message, INPUT_TOO_LONG_MESSAGE);
      return true;
    });
  });

  it('loads the model for empty input and returns no vectors', async () => {
    for (const input of ['', [], null]) {
      const r = await bed.embed.embed(command({ input }));
      assert.deepEqual(r.embeddings, []);
    }
    assert.equal(bed.binding.models.length, 1, 'model loaded');
    assert.equal(bed.binding.embedCalls.length, 0);
  });

  it('rejects other input types with `invalid input type`', async () => {
    for (const input of [5, [1], { a: 1 }, ['a', 2]]) {
      await assert.rejects(bed.embed.embed(command({ input })), /^InvalidRequestError: invalid input type$/);
    }
    assert.deepEqual(decodeEmbedInput(['a', '']), ['a', '']);
  });

  it('reports unknown models with the embed wording', async () => {
    await assert.rejects(bed.embed.embed(command({ model: 'nope' })), (e: unknown) => {
      assert.ok(e instanceof ModelNotFoundError);
      assert.equal(e.message, 'model "nope" not found, try pulling it first');
      return true;
    });
    await assert.rejects(bed.embed.embed(command({ model: '' })), /model '' not found/);
  });

  it('fails on NaN/Inf vectors', async () => {
    bed.binding.embedVector = () => Float32Array.from([1, NaN]);
    await assert.rejects(bed.embed.embed(command()), /embedding contains NaN or Inf values/);
  });
});

describe('normalizeEmbedding', () => {
  it('normalizes, keeps zero vectors, ignores dimensions ≤ 0 or ≥ length', () => {
    assert.deepEqual(normalizeEmbedding([3, 4]), [0.6, 0.8]);
    assert.deepEqual(normalizeEmbedding([0, 0]), [0, 0]);
    assert.deepEqual(normalizeEmbedding([3, 4, 12], 0), normalizeEmbedding([3, 4, 12]));
    assert.deepEqual(normalizeEmbedding([3, 4, 12], 5), normalizeEmbedding([3, 4, 12]));
    assert.deepEqual(normalizeEmbedding([3, 4, 12], 2), [0.6, 0.8]);
  });
});
