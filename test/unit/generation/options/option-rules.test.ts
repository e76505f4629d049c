import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  clampFloat32,
  clampMainGpu,
  clampNumBatch,
  clampNumCtx,
  clampNumGpu,
  clampNumKeep,
  clampNumPredict,
  clampNumThread,
  clampProbability,
  clampRepeatLastN,
  clampRepeatPenalty,
  clampSeed,
  clampTemperature,
  clampTopK,
  FLOAT32_MAX,
  INT32_MAX,
  MAX_CONTEXT_CELLS,
  maxThreads,
} from '../../../../src/generation/options/option-rules';
import { OPTION_TABLE } from '../../../../src/common/options';
import { REPO_ROOT } from '../../../../src/config';
import { resolveOptions } from '../../../../src/generation/options/options';

// Issue 32 item 3: one rule per option (docs/security.md "Option bounds").
describe('option rules', () => {
  it('num_ctx: at least 4 (vision 2048), at most the training context and the engine’s cells over the slots', () => {
    assert.equal(clampNumCtx(0), 4);
    assert.equal(clampNumCtx(-(2 ** 31)), 4);
    assert.equal(clampNumCtx(1000), 1000);
    assert.equal(clampNumCtx(2 ** 31, { trainContext: 2048 }), 2048);
    assert.equal(clampNumCtx(2 ** 53), MAX_CONTEXT_CELLS);
    assert.equal(clampNumCtx(2 ** 31, { cellSlots: 4 }), MAX_CONTEXT_CELLS / 4);
    assert.equal(clampNumCtx(100, { vision: true }), 2048);
    assert.equal(clampNumCtx(100, { vision: true, trainContext: 1024 }), 1024);
    // Shared cells: at least one per slot.
    assert.equal(clampNumCtx(4, { slots: 8 }), 8);
    assert.equal(clampNumCtx(2 ** 31, { trainContext: 2, slots: 4 }), 4);
  });

  it('num_batch: 1 to num_ctx', () => {
    assert.equal(clampNumBatch(0, 512), 1);
    assert.equal(clampNumBatch(-1, 512), 1);
    assert.equal(clampNumBatch(2 ** 31, 512), 512);
    assert.equal(clampNumBatch(256, 512), 256);
  });

  it('num_gpu: negatives are automatic (-1), at most int32; main_gpu -1 to int32', () => {
    assert.equal(clampNumGpu(-5), -1);
    assert.equal(clampNumGpu(0), 0);
    assert.equal(clampNumGpu(2 ** 53), INT32_MAX);
    assert.equal(clampMainGpu(-(2 ** 31)), -1);
    assert.equal(clampMainGpu(1e308), INT32_MAX);
    assert.equal(clampMainGpu(1), 1);
  });

  it('num_thread: 0 or below automatic, at most the logical CPUs (and ggml’s 512)', () => {
    assert.equal(clampNumThread(-1, 8), 0);
    assert.equal(clampNumThread(0, 8), 0);
    assert.equal(clampNumThread(3, 8), 3);
    assert.equal(clampNumThread(2 ** 31, 8), 8);
    assert.equal(maxThreads(4096), 512);
    assert.equal(maxThreads(0), 1);
    assert.ok(clampNumThread(2 ** 31) <= 512);
  });

  it('num_keep: -1 (whole prompt) to num_ctx', () => {
    assert.equal(clampNumKeep(-(2 ** 31), 512), -1);
    assert.equal(clampNumKeep(-1, 512), -1);
    assert.equal(clampNumKeep(24, 512), 24);
    assert.equal(clampNumKeep(2 ** 53, 512), 512);
  });

  it('seed: negative is random (-1), else modulo 2^32', () => {
    assert.equal(clampSeed(-(2 ** 31)), -1);
    assert.equal(clampSeed(42), 42);
    assert.equal(clampSeed(2 ** 32 + 5), 5);
    assert.equal(clampSeed(2 ** 53), 0);
    assert.ok(clampSeed(1e308) >= 0 && clampSeed(1e308) < 2 ** 32 && Number.isInteger(clampSeed(1e308)));
  });

  it('num_predict: any negative is -1 (unbounded), 0 stays 0, at most int32', () => {
    assert.equal(clampNumPredict(-2), -1);
    assert.equal(clampNumPredict(-1e308), -1);
    assert.equal(clampNumPredict(0), 0);
    assert.equal(clampNumPredict(1e308), INT32_MAX);
  });

  it('top_k: 0 (off) to int32; probabilities [0, 1]', () => {
    assert.equal(clampTopK(-1), 0);
    assert.equal(clampTopK(2 ** 31), INT32_MAX);
    assert.equal(clampTopK(40), 40);
    for (const [p, want] of [
      [-1, 0],
      [0.5, 0.5],
      [2, 1],
      [1e308, 1],
      [-1e308, 0],
    ]) {
      assert.equal(clampProbability(p), want);
    }
  });

  it('repeat_last_n: -1 is num_ctx, below -1 off (0), at most num_ctx', () => {
    assert.equal(clampRepeatLastN(-1, 512), 512);
    assert.equal(clampRepeatLastN(-2, 512), 0);
    assert.equal(clampRepeatLastN(0, 512), 0);
    assert.equal(clampRepeatLastN(64, 512), 64);
    assert.equal(clampRepeatLastN(2 ** 31, 512), 512);
  });

  it('temperature ≥ 0, repeat_penalty ≤ 0 is off, penalties within float32', () => {
    assert.equal(clampTemperature(-1), 0);
    assert.equal(clampTemperature(1e308), FLOAT32_MAX);
    assert.equal(clampTemperature(0.7), 0.7);
    assert.equal(clampRepeatPenalty(0), 1);
    assert.equal(clampRepeatPenalty(-1e308), 1);
    assert.equal(clampRepeatPenalty(1.1), 1.1);
    assert.equal(clampRepeatPenalty(1e308), FLOAT32_MAX);
    assert.equal(clampFloat32(-1e308), -FLOAT32_MAX);
    assert.equal(clampFloat32(1.5), 1.5);
  });
});

describe('resolveOptions applies the rules', () => {
  const defaults = { contextLength: 0, threads: 0, maxThreads: 8 };

  it('num_batch 0 becomes 1, num_ctx 2^31 the training context, num_thread 2^31 the CPUs', () => {
    const { load } = resolveOptions(
      { num_batch: 0, num_ctx: 2 ** 31, num_thread: 2 ** 31, num_gpu: -7, main_gpu: -9 },
      {},
      { ...defaults, trainContext: 2048 },
    );
    assert.deepEqual(load, { numCtx: 2048, numBatch: 1, numGpu: -1, numThread: 8, mainGpu: -1 });
  });

  it('LLAMAD_THREADS (the operator’s) is capped at ggml’s 512 only', () => {
    assert.equal(resolveOptions({}, {}, { ...defaults, threads: 12 }).load.numThread, 12);
    assert.equal(resolveOptions({}, {}, { ...defaults, threads: 1000 }).load.numThread, 512);
  });

  it('bounds num_ctx by the slots: per-slot cells within the engine’s limit, shared cells at least one per slot', () => {
    const perSlot = resolveOptions(
      { num_ctx: 2 ** 31 },
      {},
      { ...defaults, parallel: { numParallel: 4, kvUnified: false } },
    );
    assert.equal(perSlot.load.numCtx, MAX_CONTEXT_CELLS / 4);
    const shared = resolveOptions({ num_ctx: 1 }, {}, { ...defaults, parallel: { numParallel: 8, kvUnified: true } });
    assert.equal(shared.load.numCtx, 8);
  });

  it('a vision model gets at least 2048 (within its training context)', () => {
    assert.equal(resolveOptions({ num_ctx: 512 }, {}, { ...defaults, vision: true }).load.numCtx, 2048);
    assert.equal(
      resolveOptions({ num_ctx: 512 }, {}, { ...defaults, vision: true, trainContext: 1000 }).load.numCtx,
      1000,
    );
  });

  it('sampling values land in the engine’s ranges; a Modelfile value is clamped the same way', () => {
    const { sampling } = resolveOptions(
      {
        num_keep: -(2 ** 31),
        seed: -5,
        num_predict: 1e308,
        top_k: -(2 ** 31),
        top_p: 7,
        min_p: -1,
        typical_p: 1e308,
        temperature: -1e308,
        presence_penalty: 1e308,
        frequency_penalty: -1e308,
      },
      { repeat_last_n: 2 ** 31, repeat_penalty: 0 },
      { ...defaults, trainContext: 1024 },
    );
    assert.deepEqual(sampling, {
      numKeep: -1,
      seed: -1,
      numPredict: INT32_MAX,
      topK: 0,
      topP: 1,
      minP: 0,
      typicalP: 1,
      repeatLastN: 1024,
      temperature: 0,
      repeatPenalty: 1,
      presencePenalty: FLOAT32_MAX,
      frequencyPenalty: -FLOAT32_MAX,
      stop: [],
    });
  });

  it('repeat_last_n -1 is resolved to num_ctx', () => {
    assert.equal(resolveOptions({ repeat_last_n: -1, num_ctx: 300 }, {}, defaults).sampling.repeatLastN, 300);
  });

  it('ignores a non-finite or fractional number that slipped past decoding (ints truncated)', () => {
    const { load, sampling } = resolveOptions({ num_ctx: Number.NaN, num_batch: 2.9, top_k: Infinity }, {}, defaults);
    assert.equal(load.numCtx, 4096);
    assert.equal(load.numBatch, 2);
    assert.equal(sampling.topK, 40);
  });
});

describe('docs/security.md "Option bounds"', () => {
  it('has a rule row for every option of the option table', () => {
    const doc = readFileSync(join(REPO_ROOT, 'docs', 'security.md'), 'utf8');
    const section = doc.slice(
      doc.indexOf('## Option bounds'),
      doc.indexOf('\n## ', doc.indexOf('## Option bounds') + 3),
    );
    const rows = section.split('\n').filter((line) => line.startsWith('| `'));
    for (const key of Object.keys(OPTION_TABLE)) {
      assert.ok(
        rows.some((row) => row.split('|')[1].includes(`\`${key}\``)),
        `no row for ${key}`,
      );
    }
  });
});
