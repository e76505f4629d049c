// One model across llama.cpp RPC workers (rpc-server child processes on loopback): NativeModelParams.rpcServers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeModelParams } from '../../binding';
import { TINY_LLAMA_SPM, ensureTestModels } from '../utils/models';
import { RPC_SKIP, deadEndpoint, startRpcWorkers, type RpcWorkers } from '../utils/rpc-workers';
import { GREEDY, assertRejectsCode, assertThrowsCode, binding, loadModel, runTask, seeded } from './native-helpers';

ensureTestModels();

/** Generates 24 tokens (greedy, then seeded) from the same prompt on a model loaded with `params`. */
async function generate(params: NativeModelParams): Promise<{ greedy: number[]; sampled: number[] }> {
  const model = await loadModel(TINY_LLAMA_SPM, params);
  // The same attention on both sides: 'auto' is off on the local CPU and llama.cpp's choice (on) over RPC workers.
  const ctx = new binding.Context(model, { nCtx: 256, nThreads: 1, flashAttn: 'on' });
  try {
    const tokens = model.tokenize('The quick brown fox', true, false);
    const greedy = await runTask(ctx, { tokens, nPredict: 24, ignoreEos: true, sampling: GREEDY });
    const sampled = await runTask(ctx, { tokens, nPredict: 24, ignoreEos: true, sampling: seeded(42) });
    return { greedy: greedy.tokens, sampled: sampled.tokens };
  } finally {
    await ctx.dispose();
    await model.dispose();
  }
}

describe('RPC workers (rpcServers)', { skip: RPC_SKIP }, () => {
  let workers: RpcWorkers;
  before(async () => {
    workers = await startRpcWorkers(2);
  });
  after(async () => {
    await workers?.stop();
  });

  it('gives the same tokens across two workers as the local run (greedy and seeded)', async () => {
    const local = await generate({});
    const remote = await generate({ rpcServers: workers.endpoints });
    assert.deepEqual(remote.greedy, local.greedy);
    assert.deepEqual(remote.sampled, local.sampled);
  });

  it('reports the layers on the workers in memory(): RPC buffers with their endpoint, not host memory', async () => {
    const model = await loadModel(TINY_LLAMA_SPM, { rpcServers: workers.endpoints });
    const ctx = new binding.Context(model, { nCtx: 256, nThreads: 1 });
    const rpc = ctx.memory().filter((e) => e.endpoint);
    assert.deepEqual(rpc.map((e) => e.endpoint).sort(), [...workers.endpoints].sort(), JSON.stringify(ctx.memory()));
    for (const entry of rpc) {
      assert.match(entry.buffer, /^RPC\d+\[127\.0\.0\.1:\d+\]$/);
      assert.match(entry.device, /^RPC\d+$/);
      assert.equal(entry.host, false);
      assert.ok(entry.model > 0, 'each worker holds weights');
    }
    assert.ok(
      ctx.memory().some((e) => e.endpoint && e.context > 0),
      'the KV cache of the offloaded layers is on a worker',
    );
    for (const entry of ctx.memory().filter((e) => !e.endpoint)) assert.equal(entry.host, true);
    // A second model over the same workers shares ggml's connection (rpc-server serves one client at a time): no
    // probe, no deadlock.
    const second = await loadModel(TINY_LLAMA_SPM, { rpcServers: workers.endpoints });
    await second.dispose();
    await ctx.dispose();
    await model.dispose();
  });

  it('fails the load cleanly when a worker is not reachable (no abort)', async () => {
    const dead = await deadEndpoint();
    const model = new binding.Model(TINY_LLAMA_SPM, { rpcServers: [workers.endpoints[0], dead] });
    await assert.rejects(model.load(), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'LLAMA_MODEL_LOAD_FAILED');
      assert.equal(err.message, `rpc server ${dead} unreachable: Connection refused`);
      return true;
    });
    assert.equal(model.loaded, false);
    // The process lives on and the workers still serve.
    const again = await loadModel(TINY_LLAMA_SPM, { rpcServers: workers.endpoints });
    await again.dispose();
  });

  it('checks the endpoints when the model is created', async () => {
    for (const rpcServers of [['nope'], ['127.0.0.1:0'], ['[::1]:50052'], ['a:1', 'a:1']]) {
      assertThrowsCode(() => new binding.Model(TINY_LLAMA_SPM, { rpcServers }), 'LLAMA_INVALID_ARGUMENT');
    }
    assertThrowsCode(
      () => new binding.Model(TINY_LLAMA_SPM, { rpcServers: 'a:1' as unknown as string[] }),
      'LLAMA_INVALID_ARGUMENT',
    );
    await assertRejectsCode(
      new binding.Model(TINY_LLAMA_SPM, { rpcServers: [await deadEndpoint()] }).load(),
      'LLAMA_MODEL_LOAD_FAILED',
    );
  });

  it('a worker that dies mid-generation ends the task with an error; the process lives on (vendor patch 0001)', async () => {
    const own = await startRpcWorkers(1);
    try {
      const model = await loadModel(TINY_LLAMA_SPM, { rpcServers: own.endpoints });
      const ctx = new binding.Context(model, { nCtx: 4096, nThreads: 1 });
      const tokens = model.tokenize('Hi', true, false);
      let killed: Promise<void> | undefined;
      await assert.rejects(
        runTask(ctx, { tokens, nPredict: 4000, ignoreEos: true }, (event) => {
          if (!killed && event.token >= 0) killed = own.kill(0);
        }),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, 'LLAMA_DECODE_FAILED');
          assert.equal(err.message, `rpc server ${own.endpoints[0]}: connection lost`);
          return true;
        },
      );
      // Every later decode of that model fails at once, cleanly.
      await assertRejectsCode(runTask(ctx, { tokens, nPredict: 4 }), 'LLAMA_DECODE_FAILED');
      // While the broken model is loaded, a new load over that worker is refused without a probe.
      const again = new binding.Model(TINY_LLAMA_SPM, { rpcServers: own.endpoints });
      await assert.rejects(again.load(), /rpc server .*: connection lost \(a loaded model still holds it/);
      await ctx.dispose();
      await model.dispose();
      // Once it is freed, the dead worker is a clean load error, and the local model still works.
      await assert.rejects(
        new binding.Model(TINY_LLAMA_SPM, { rpcServers: own.endpoints }).load(),
        new RegExp(`^Error: rpc server ${own.endpoints[0]} unreachable: Connection refused$`),
      );
    } finally {
      await own.stop();
    }
    assert.equal((await generate({})).greedy.length, 24);
  });
});
