import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  capContext,
  capOptions,
  capOutputTokens,
  DEFAULT_NUM_CTX,
  resolveOptions,
} from '../../../../src/generation/options';

const defaults = { contextLength: 0, threads: 0 };

// Issue 33 item 1: a policy's max_context / max_output_tokens cap what a request may load and generate.
describe('option caps of a tenant policy', () => {
  it('capContext / capOutputTokens: lower only; unlimited output becomes the cap; no cap changes nothing', () => {
    assert.equal(capContext(8192, { max_context: 2048 }), 2048);
    assert.equal(capContext(1024, { max_context: 2048 }), 1024);
    assert.equal(capContext(8192, {}), 8192);
    assert.equal(capContext(8192, undefined), 8192);
    assert.equal(capOutputTokens(-1, { max_output_tokens: 64 }), 64);
    assert.equal(capOutputTokens(-2, { max_output_tokens: 64 }), 64);
    assert.equal(capOutputTokens(500, { max_output_tokens: 64 }), 64);
    assert.equal(capOutputTokens(10, { max_output_tokens: 64 }), 10);
    assert.equal(capOutputTokens(0, { max_output_tokens: 64 }), 0);
    assert.equal(capOutputTokens(-1, { max_context: 64 }), -1);
  });

  it('capOptions: caps num_ctx when given and num_predict always (set to the cap when absent)', () => {
    const caps = { max_context: 2048, max_output_tokens: 64 };
    assert.deepEqual(capOptions({ num_ctx: 9000.7, num_predict: 100, temperature: 0 }, caps), {
      num_ctx: 2048,
      num_predict: 64,
      temperature: 0,
    });
    assert.deepEqual(capOptions({}, caps), { num_predict: 64 });
    assert.deepEqual(capOptions({ num_predict: -1 }, { max_context: 2048 }), { num_predict: -1 });
    const options = { num_ctx: 9000 };
    assert.equal(capOptions(options, undefined), options);
    assert.equal(capOptions(options, {}), options);
  });

  it('resolveOptions applies them to the effective values: request, Modelfile and defaults alike', () => {
    const caps = { max_context: 1024, max_output_tokens: 32 };
    const fromRequest = resolveOptions({ num_ctx: 8192, num_batch: 4096, num_predict: 100 }, {}, { ...defaults, caps });
    assert.equal(fromRequest.load.numCtx, 1024);
    assert.equal(fromRequest.load.numBatch, 1024, 'num_batch still at most num_ctx');
    assert.equal(fromRequest.sampling.numPredict, 32);
    const fromModelfile = resolveOptions({}, { num_ctx: 8192 }, { ...defaults, caps });
    assert.equal(fromModelfile.load.numCtx, 1024);
    assert.equal(fromModelfile.sampling.numPredict, 32, 'unlimited (-1) becomes the cap');
    assert.equal(resolveOptions({}, {}, { ...defaults, caps }).load.numCtx, 1024, `the default ${DEFAULT_NUM_CTX}`);
    assert.equal(resolveOptions({ num_predict: 8 }, {}, { ...defaults, caps }).sampling.numPredict, 8);
    assert.equal(resolveOptions({ num_ctx: 512 }, {}, { ...defaults, caps }).load.numCtx, 512);
    // The engine's minimum still wins (a vision model needs 2048).
    assert.equal(resolveOptions({}, {}, { ...defaults, vision: true, caps }).load.numCtx, 2048);
    // What a limiter reserves (capOptions over the merged map) agrees with what runs.
    const merged = { ...{ num_predict: 500 }, ...{} };
    assert.equal(
      capOptions(merged, caps).num_predict,
      resolveOptions({}, merged, { ...defaults, caps }).sampling.numPredict,
    );
    assert.deepEqual(
      resolveOptions({ num_ctx: 8192 }, {}, defaults),
      resolveOptions({ num_ctx: 8192 }, {}, { ...defaults, caps: {} }),
    );
  });
});
