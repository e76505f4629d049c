import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../src/common/errors';
import { decodeOptions, formatParams, OPTION_TABLE, OptionMap } from '../../../../src/common/options';
import { EffectiveOptions, MAX_DRAFT, resolveOptions } from '../../../../src/generation/options/options';
import { INT32_MAX, MAX_CONTEXT_CELLS } from '../../../../src/generation/options/option-rules';
import { batchParams, embeddingSizes, threadParams, totalCells } from '../../../../src/runner/context-params';
import type { RunnerSpec } from '../../../../src/runner';
import { EXTREME_PARAMETER_TEXTS, EXTREME_VALUES } from '../../../utils/extreme-values';

const FLOAT32_MAX = 3.4028234663852886e38;
const isInt32 = (n: number, lo = -(2 ** 31)) => Number.isInteger(n) && n >= lo && n <= INT32_MAX;
const isFloat32 = (n: number) => Number.isFinite(n) && Math.abs(n) <= FLOAT32_MAX;

/** The native ranges (native/convert.cpp, context_plan.cpp) every effective option must be in. */
function assertInEngineRanges(
  e: EffectiveOptions,
  what: string,
  parallel: { numParallel: number; kvUnified: boolean },
) {
  const { load, sampling } = e;
  const spec: RunnerSpec = { modelPath: '/m', ...parallel, ...load };
  const cells = totalCells(spec);
  assert.ok(Number.isInteger(load.numCtx) && load.numCtx >= 4 && cells <= MAX_CONTEXT_CELLS, `${what}: numCtx`);
  assert.ok(cells >= parallel.numParallel, `${what}: a cell per slot`);
  assert.ok(load.numBatch >= 1 && load.numBatch <= load.numCtx && Number.isInteger(load.numBatch), `${what}: batch`);
  const nBatch = batchParams(spec).nBatch ?? 0;
  assert.ok(nBatch >= parallel.numParallel && nBatch <= MAX_CONTEXT_CELLS, `${what}: native batch ≥ slots`);
  const embed = embeddingSizes(spec);
  const seqMax = Math.max(64, parallel.numParallel);
  assert.ok(
    embed.nBatch !== undefined && embed.nBatch % seqMax === 0 && embed.nBatch >= seqMax,
    `${what}: embed batch`,
  );
  assert.ok(embed.nCtx >= embed.nBatch && embed.nCtx <= MAX_CONTEXT_CELLS, `${what}: embedding cells`);
  assert.ok(isInt32(load.numGpu, -1), `${what}: numGpu`);
  if (load.mainGpu !== undefined) assert.ok(isInt32(load.mainGpu, -1), `${what}: mainGpu`);
  assert.ok(load.numThread >= 0 && load.numThread <= 512 && Number.isInteger(load.numThread), `${what}: threads`);
  const threads = threadParams(spec, undefined).nThreads ?? 0;
  assert.ok(threads >= 1 && threads <= 512, `${what}: native threads`);
  assert.ok(isInt32(sampling.numKeep, -1), `${what}: numKeep`);
  assert.ok(Number.isInteger(sampling.seed) && sampling.seed >= -1 && sampling.seed < 2 ** 32, `${what}: seed`);
  assert.ok(isInt32(sampling.numPredict, -1), `${what}: numPredict`);
  assert.ok(isInt32(10 * load.numCtx), `${what}: the unbounded budget 10 × num_ctx`);
  assert.ok(isInt32(sampling.topK, 0), `${what}: topK`);
  for (const p of [sampling.topP, sampling.minP, sampling.typicalP]) assert.ok(p >= 0 && p <= 1, `${what}: p`);
  assert.ok(isInt32(sampling.repeatLastN, 0) && sampling.repeatLastN <= load.numCtx, `${what}: repeatLastN`);
  assert.ok(isFloat32(sampling.temperature) && sampling.temperature >= 0, `${what}: temperature`);
  assert.ok(isFloat32(sampling.repeatPenalty) && sampling.repeatPenalty > 0, `${what}: repeatPenalty`);
  assert.ok(isFloat32(sampling.presencePenalty) && isFloat32(sampling.frequencyPenalty), `${what}: penalties`);
  assert.ok(
    sampling.stop.every((s) => typeof s === 'string' && s !== ''),
    `${what}: stop`,
  );
  if (e.draft) {
    assert.ok(e.draft.nMax >= 1 && e.draft.nMax <= MAX_DRAFT && Number.isInteger(e.draft.nMax), `${what}: draft`);
  }
}

const PARALLEL = [
  { numParallel: 1, kvUnified: false },
  { numParallel: 4, kvUnified: true },
  { numParallel: 3, kvUnified: false },
];
const DEFAULTS = [
  { contextLength: 0, threads: 0 },
  { contextLength: 2 ** 31, threads: 2 ** 31, trainContext: 2048, hasDraft: true, vision: true },
];

// Generated from OPTION_TABLE: a new option is covered without touching this file.
describe('every option × every extreme value: a 400 or values the engine accepts', () => {
  for (const key of Object.keys(OPTION_TABLE)) {
    it(`${key} in a request's options`, () => {
      for (const value of EXTREME_VALUES) {
        let decoded: OptionMap;
        try {
          decoded = decodeOptions({ [key]: value });
        } catch (err) {
          assert.ok(err instanceof InvalidRequestError, `${key}=${JSON.stringify(value)}: ${String(err)}`);
          assert.match(err.message, new RegExp(`^option "${key}" must be of`));
          continue;
        }
        for (const parallel of PARALLEL) {
          for (const defaults of DEFAULTS) {
            const what = `${key}=${JSON.stringify(value)} ${JSON.stringify(parallel)}`;
            // As the request, as the Modelfile layer, and both.
            assertInEngineRanges(resolveOptions(decoded, {}, { ...defaults, parallel }), what, parallel);
            assertInEngineRanges(resolveOptions({}, decoded, { ...defaults, parallel }), what, parallel);
            assertInEngineRanges(
              resolveOptions({ draft_ngram: true }, decoded, { ...defaults, parallel }),
              what,
              parallel,
            );
          }
        }
      }
    });

    it(`${key} as a Modelfile PARAMETER`, () => {
      for (const text of EXTREME_PARAMETER_TEXTS) {
        let params: OptionMap;
        try {
          params = formatParams(new Map([[key, [text]]])).params;
        } catch (err) {
          assert.ok(err instanceof InvalidRequestError, `${key} ${text}: ${String(err)}`);
          continue;
        }
        for (const parallel of PARALLEL) {
          assertInEngineRanges(resolveOptions({}, params, { ...DEFAULTS[0], parallel }), `${key} ${text}`, parallel);
        }
      }
    });
  }
});

describe('context-params: the native guard', () => {
  const spec = (over: Partial<RunnerSpec>): RunnerSpec => ({
    modelPath: '/m',
    numCtx: 512,
    numBatch: 512,
    numGpu: -1,
    numThread: 0,
    numParallel: 1,
    ...over,
  });

  it('raises the batch to the slots (llama.cpp asserts n_outputs_max <= n_batch) and caps it at the cells', () => {
    assert.deepEqual(batchParams(spec({ numBatch: 1, numParallel: 4, kvUnified: true })), { nBatch: 4 });
    assert.deepEqual(batchParams(spec({ numBatch: 0, numParallel: 2 })), { nBatch: 2 });
    assert.deepEqual(batchParams(spec({ numBatch: 2 ** 31, numCtx: 64, numParallel: 2 })), { nBatch: 128 });
    assert.deepEqual(batchParams(spec({ numBatch: 256 })), { nBatch: 256 });
  });

  it('an embedding context: batch a multiple of its 64 sequences, at least num_ctx; as many cells', () => {
    // num_ctx 4 on a causal model: n_batch capped at n_ctx = 4 < 64 sequences was the n_outputs_max assert.
    assert.deepEqual(embeddingSizes(spec({ numBatch: 1, numCtx: 4 })), { nCtx: 64, nBatch: 64, nUbatch: 64 });
    // num_ctx 96 on BERT: a 96-token ubatch over 64 sequences was GGML_ASSERT(ggml_can_mul_mat(a, b)).
    assert.deepEqual(embeddingSizes(spec({ numBatch: 96, numCtx: 96 })), { nCtx: 128, nBatch: 128, nUbatch: 128 });
    assert.deepEqual(embeddingSizes(spec({ numBatch: 512, numCtx: 2048 })), {
      nCtx: 2048,
      nBatch: 2048,
      nUbatch: 2048,
    });
    assert.deepEqual(embeddingSizes(spec({ numBatch: 512, numCtx: 512, numParallel: 2 })), {
      nCtx: 1024,
      nBatch: 512,
      nUbatch: 512,
    });
    assert.deepEqual(embeddingSizes(spec({ numBatch: 8, numCtx: 8, numParallel: 100, kvUnified: true })), {
      nCtx: 100,
      nBatch: 100,
      nUbatch: 100,
    });
  });

  it('an explicit num_thread never asks ggml for more than 512 threads', () => {
    assert.deepEqual(threadParams(spec({ numThread: 2 ** 31 }), undefined), { nThreads: 512 });
    assert.deepEqual(threadParams(spec({ numThread: 3 }), undefined), { nThreads: 3 });
  });
});
