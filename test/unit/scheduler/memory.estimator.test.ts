import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { groupsQueryHeads, SystemMemoryProbe } from '../../../src/scheduler/memory.estimator';
import { readGguf } from '../../../src/models/gguf';
import { spec } from '../../utils/fake-runner';
import { ensureTestModels, TINY_LLAMA_MHA, TINY_QWEN2 } from '../../utils/models';

describe('SystemMemoryProbe', () => {
  it('estimates weights + KV cache (2 × n_layer × n_ctx × n_embd_kv × 2 bytes) + compute', async () => {
    ensureTestModels();
    const probe = new SystemMemoryProbe();
    const md = (await readGguf(TINY_QWEN2)).metadata as Record<string, number | string>;
    const arch = md['general.architecture'] as string;
    const nLayer = Number(md[`${arch}.block_count`]);
    const nHead = Number(md[`${arch}.attention.head_count`]);
    const nHeadKv = Number(md[`${arch}.attention.head_count_kv`] ?? nHead);
    const nEmbdKv = (Number(md[`${arch}.embedding_length`]) / nHead) * nHeadKv;
    // Flash attention on: no attention scores in the compute buffer (the next test counts them).
    const on = { modelPath: TINY_QWEN2, flashAttention: 'on' as const };
    const small = await probe.estimate(spec({ ...on, numCtx: 256, numParallel: 2 }));
    const big = await probe.estimate(spec({ ...on, numCtx: 512, numParallel: 2 }));
    assert.equal(big - small, 2 * nLayer * 512 * nEmbdKv * 2);
    assert.ok(small > (await stat(TINY_QWEN2)).size);
    // Slots sharing one cache (OLLAMA_NUM_PARALLEL unset) need num_ctx cells in all, not num_ctx per slot.
    const shared = await probe.estimate(spec({ modelPath: TINY_QWEN2, numCtx: 512, numParallel: 4, kvUnified: true }));
    const one = await probe.estimate(spec({ modelPath: TINY_QWEN2, numCtx: 512, numParallel: 1 }));
    assert.equal(shared, one);
  });

  it('counts the attention scores of a context without flash attention (off; auto on the CPU without GQA): batch × cells × heads × 4', async () => {
    ensureTestModels();
    const probe = new SystemMemoryProbe();
    const md = (await readGguf(TINY_QWEN2)).metadata as Record<string, number | string>;
    const nHead = Number(md[`${md['general.architecture'] as string}.attention.head_count`]);
    const base = { modelPath: TINY_QWEN2, numCtx: 512, numParallel: 2, numBatch: 256 };
    const on = await probe.estimate(spec({ ...base, flashAttention: 'on' }));
    const scores = 4 * 256 * 512 * nHead;
    assert.equal(await probe.estimate(spec(base)), on, 'auto (unset) with 2 q heads per K/V head is on');
    assert.equal((await probe.estimate(spec({ ...base, flashAttention: 'off' }))) - on, scores, 'off');
    // A draft model's context runs without it too: its scores count again.
    const drafted = (flashAttention?: 'on' | 'off') =>
      probe.estimate(spec({ ...base, flashAttention, draftModelPath: TINY_QWEN2 }));
    assert.equal((await drafted('off')) - (await drafted('on')), 2 * scores);
    // Multi-head attention: auto stays off on the CPU, so the scores count.
    const mha = { ...base, modelPath: TINY_LLAMA_MHA };
    const mhaOn = await probe.estimate(spec({ ...mha, flashAttention: 'on' }));
    assert.equal((await probe.estimate(spec(mha))) - mhaOn, scores, 'auto (unset), one K/V head per q head');
  });

  it('groups query heads for 2 to 16 q heads per K/V head (the CPU flash-attention default)', () => {
    assert.equal(groupsQueryHeads(32, 8), true);
    assert.equal(groupsQueryHeads(4, 2), true);
    assert.equal(groupsQueryHeads(64, 4), true);
    assert.equal(groupsQueryHeads(32, 32), false, 'multi-head');
    assert.equal(groupsQueryHeads(64, 2), false, '32 per group: more than a tile takes');
    assert.equal(groupsQueryHeads(12, 5), false, 'not a whole number per group');
    assert.equal(groupsQueryHeads(8, 0), false);
  });

  it('sizes the KV cache by OLLAMA_KV_CACHE_TYPE: q8_0 34 and q4_0 18 bytes per 32 elements, f16 2 per element', async () => {
    ensureTestModels();
    const probe = new SystemMemoryProbe();
    const base = { modelPath: TINY_QWEN2, numParallel: 2, flashAttention: 'on' as const };
    const kvOf = async (kvCacheType?: 'f16' | 'q8_0' | 'q4_0') =>
      (await probe.estimate(spec({ ...base, numCtx: 512, kvCacheType }))) -
      (await probe.estimate(spec({ ...base, numCtx: 256, kvCacheType })));
    const f16 = await kvOf();
    assert.equal(await kvOf('f16'), f16);
    assert.equal(await kvOf('q8_0'), (f16 / 2) * (34 / 32));
    assert.equal(await kvOf('q4_0'), (f16 / 2) * (18 / 32));
    const whole = (kvCacheType?: 'q8_0') => probe.estimate(spec({ ...base, numCtx: 512, kvCacheType }));
    assert.ok((await whole('q8_0')) < (await whole()));
  });

  it('adds a draft model: its weights, its KV cache (33 more cells per slot) and compute buffers', async () => {
    ensureTestModels();
    const probe = new SystemMemoryProbe();
    const base = { modelPath: TINY_QWEN2, numCtx: 256, numParallel: 2, flashAttention: 'on' as const };
    const plain = await probe.estimate(spec(base));
    const drafted = await probe.estimate(spec({ ...base, draftModelPath: TINY_QWEN2 }));
    // The draft is the same file: its share is the model's again plus the KV of 2 × 33 extra cells.
    const perCell = (plain - (await probe.estimate(spec({ ...base, numCtx: 128 })))) / (2 * 128);
    assert.equal(drafted - plain, plain + perCell * 2 * 33);
  });

  it('adds the host-RAM prompt cache the runner may fill (its cacheRamBytes share), on RPC workers too', async () => {
    ensureTestModels();
    const probe = new SystemMemoryProbe();
    const base = { modelPath: TINY_QWEN2, numCtx: 512 };
    const share = 96 * 2 ** 20;
    const plain = await probe.estimate(spec(base));
    assert.equal((await probe.estimate(spec({ ...base, cacheRamBytes: share }))) - plain, share);
    const rpc = { ...base, rpcServers: ['10.0.0.2:50052'] };
    const remote = await probe.estimate(spec(rpc));
    assert.equal((await probe.estimate(spec({ ...rpc, cacheRamBytes: share }))) - remote, share, 'kept in local RAM');
  });

  it('counts only the local share when every layer is on RPC workers', async () => {
    ensureTestModels();
    const probe = new SystemMemoryProbe();
    const local = await probe.estimate(spec({ modelPath: TINY_QWEN2, numCtx: 512 }));
    const remote = await probe.estimate(spec({ modelPath: TINY_QWEN2, numCtx: 512, rpcServers: ['10.0.0.2:50052'] }));
    assert.ok(remote < local - (await stat(TINY_QWEN2)).size / 2, `${remote} vs ${local}`);
    const partial = spec({ modelPath: TINY_QWEN2, numCtx: 512, numGpu: 2, rpcServers: ['10.0.0.2:50052'] });
    // With RPC workers llama.cpp keeps flash attention (auto): no attention scores, as a local load with it on.
    const localOn = await probe.estimate(spec({ modelPath: TINY_QWEN2, numCtx: 512, flashAttention: 'on' }));
    assert.equal(await probe.estimate(partial), localOn, 'a partial offload is estimated as local');
  });

  it('never rejects for a missing file and reports system memory', async () => {
    const probe = new SystemMemoryProbe();
    assert.ok((await probe.estimate(spec({ modelPath: '/does/not/exist' }))) > 0);
    assert.ok(probe.free() > 0 && probe.free() <= probe.total());
  });
});
