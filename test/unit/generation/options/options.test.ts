import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_DRAFT_NUM_PREDICT,
  DEFAULT_NGRAM_DRAFT,
  DEFAULT_NUM_CTX,
  resolveOptions,
} from '../../../../src/generation/options/options';

const defaults = { contextLength: 0, threads: 0 };

describe('resolveOptions: RPC workers', () => {
  it('takes the Modelfile’s rpc, else LLAMAD_RPC_SERVERS; rpc none opts out; requests cannot set it', () => {
    const daemon = { ...defaults, rpcServers: ['10.0.0.9:50052'] };
    assert.deepEqual(resolveOptions({}, {}, daemon).load.rpcServers, ['10.0.0.9:50052']);
    assert.deepEqual(resolveOptions({}, { rpc: ['10.0.0.2:1'] }, daemon).load.rpcServers, ['10.0.0.2:1']);
    assert.equal(resolveOptions({}, { rpc: [] }, daemon).load.rpcServers, undefined);
    assert.equal(resolveOptions({ rpc: ['10.0.0.3:1'] }, {}, defaults).load.rpcServers, undefined);
  });
});

describe('resolveOptions (request ← Modelfile ← defaults)', () => {
  it('uses Ollama’s defaults', () => {
    const { load, sampling } = resolveOptions({}, {}, defaults);
    assert.deepEqual(load, { numCtx: DEFAULT_NUM_CTX, numBatch: 512, numGpu: -1, numThread: 0 });
    assert.deepEqual(sampling, {
      numKeep: 4,
      seed: -1,
      numPredict: -1,
      topK: 40,
      topP: 0.9,
      minP: 0,
      typicalP: 1,
      repeatLastN: 64,
      temperature: 0.8,
      repeatPenalty: 1,
      presencePenalty: 0,
      frequencyPenalty: 0,
      stop: [],
    });
  });

  it('lets the request win over the Modelfile and the Modelfile over the defaults', () => {
    const { sampling } = resolveOptions({ temperature: 0.1 }, { temperature: 0.5, top_k: 5, stop: ['END'] }, defaults);
    assert.equal(sampling.temperature, 0.1);
    assert.equal(sampling.topK, 5);
    assert.deepEqual(sampling.stop, ['END']);
  });

  it('takes num_ctx from OLLAMA_CONTEXT_LENGTH when nobody sets it', () => {
    assert.equal(resolveOptions({}, {}, { ...defaults, contextLength: 8192 }).load.numCtx, 8192);
    assert.equal(resolveOptions({}, { num_ctx: 1024 }, { ...defaults, contextLength: 8192 }).load.numCtx, 1024);
  });

  it('clamps num_ctx to the training context and to at least 4', () => {
    assert.equal(resolveOptions({ num_ctx: 100000 }, {}, { ...defaults, trainContext: 2048 }).load.numCtx, 2048);
    assert.equal(resolveOptions({ num_ctx: 1 }, {}, defaults).load.numCtx, 4);
  });

  it('uses LLAMAD_THREADS unless num_thread is given', () => {
    assert.equal(resolveOptions({}, {}, { ...defaults, threads: 3 }).load.numThread, 3);
    assert.equal(resolveOptions({ num_thread: 2 }, {}, { ...defaults, threads: 3 }).load.numThread, 2);
  });

  it('carries the optional load options only when set', () => {
    const { load } = resolveOptions({ use_mmap: false, main_gpu: 1 }, {}, defaults);
    assert.equal(load.useMmap, false);
    assert.equal(load.mainGpu, 1);
  });
});

describe('resolveOptions: flash attention and KV cache type', () => {
  it('puts non-default settings on the load options only', () => {
    assert.equal(
      resolveOptions({}, {}, { ...defaults, flashAttention: 'auto', kvCacheType: 'f16' }).load.kvCacheType,
      undefined,
    );
    const load = resolveOptions({}, {}, { ...defaults, flashAttention: 'on', kvCacheType: 'q8_0' }).load;
    assert.equal(load.flashAttention, 'on');
    assert.equal(load.kvCacheType, 'q8_0');
    assert.equal(resolveOptions({}, {}, { ...defaults, flashAttention: 'off' }).load.flashAttention, 'off');
  });
});

describe('resolveOptions: draft_num_predict and draft_ngram (speculative decoding)', () => {
  it("drafts 4 tokens with the model's draft model by default, request > Modelfile; <= 0 is off; none without a draft", () => {
    const draft = { ...defaults, hasDraft: true };
    assert.deepEqual(resolveOptions({}, {}, draft).draft, { nMax: DEFAULT_DRAFT_NUM_PREDICT });
    assert.equal(DEFAULT_DRAFT_NUM_PREDICT, 4);
    assert.deepEqual(resolveOptions({}, { draft_num_predict: 6 }, draft).draft, { nMax: 6 });
    assert.deepEqual(resolveOptions({ draft_num_predict: 2 }, { draft_num_predict: 6 }, draft).draft, { nMax: 2 });
    assert.equal(resolveOptions({ draft_num_predict: -3 }, {}, draft).draft, undefined);
    assert.equal(resolveOptions({ draft_num_predict: 0 }, {}, draft).draft, undefined);
    assert.deepEqual(resolveOptions({ draft_num_predict: 100 }, {}, draft).draft, { nMax: 64 });
    assert.equal(resolveOptions({}, {}, defaults).draft, undefined);
    assert.equal(resolveOptions({ draft_num_predict: 8 }, {}, defaults).draft, undefined);
    // Never a load option: changing it needs no reload.
    assert.equal('draftNumPredict' in resolveOptions({ draft_num_predict: 3 }, {}, draft).load, false);
  });

  it('draft_ngram drafts by lookup, with or without a draft model (48 tokens by default)', () => {
    assert.deepEqual(resolveOptions({ draft_ngram: true }, {}, defaults).draft, {
      nMax: DEFAULT_NGRAM_DRAFT,
      ngram: true,
    });
    assert.deepEqual(resolveOptions({}, { draft_ngram: true, draft_num_predict: 5 }, defaults).draft, {
      nMax: 5,
      ngram: true,
    });
    assert.deepEqual(resolveOptions({ draft_ngram: true }, {}, { ...defaults, hasDraft: true }).draft, {
      nMax: DEFAULT_NGRAM_DRAFT,
      ngram: true,
    });
    assert.equal(resolveOptions({ draft_ngram: false }, { draft_ngram: true }, defaults).draft, undefined);
  });

  it('LLAMAD_DRAFT_FIXED (draftFixed) marks every draft fixed; never without a draft', () => {
    const fixed = { ...defaults, draftFixed: true };
    assert.deepEqual(resolveOptions({}, {}, { ...fixed, hasDraft: true }).draft, {
      nMax: DEFAULT_DRAFT_NUM_PREDICT,
      fixed: true,
    });
    assert.deepEqual(resolveOptions({ draft_ngram: true, draft_num_predict: 8 }, {}, fixed).draft, {
      nMax: 8,
      ngram: true,
      fixed: true,
    });
    assert.equal(resolveOptions({}, {}, fixed).draft, undefined);
    assert.equal(resolveOptions({ draft_num_predict: 0 }, {}, { ...fixed, hasDraft: true }).draft, undefined);
  });
});
