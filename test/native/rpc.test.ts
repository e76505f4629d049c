// One model across llama.cpp RPC workers (rpc-server child processes on loopback): NativeModelParams.rpcServers.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import type { NativeModelParams } from '../../binding';
import { findAddonPath } from '../../src/native/load-binding';
import { TINY_LLAMA_SPM, ensureTestModels } from '../utils/models';
import { RPC_SKIP, deadEndpoint, startRpcWorkers, type RpcWorkers } from '../utils/rpc-workers';
import { GREEDY, assertRejectsCode, assertThrowsCode, binding, loadModel, runTask, seeded } from './native-helpers';

ensureTestModels();

/** Generates 24 tokens (greedy, then seeded) from the same prompt on a model loaded with `params`. */
async function generate(params: NativeModelParams): Promise<{ greedy: number[]; sampled: number[] }> {
  const model = await loadModel(TINY_LLAMA_SPM, params);
  const ctx = new binding.Context(model, { nCtx: 256, nThreads: 1 });
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

  it('a worker that dies mid-generation aborts the process (ggml-rpc; documented limitation)', async () => {
    // Run in a child process: ggml-rpc's dispatcher thread calls GGML_ABORT on the broken connection.
    const own = await startRpcWorkers(1);
    const script = `
      const b = require(${JSON.stringify(findAddonPath())});
      const m = new b.Model(${JSON.stringify(TINY_LLAMA_SPM)}, { rpcServers: [${JSON.stringify(own.endpoints[0])}] });
      m.load().then(() => {
        const c = new b.Context(m, { nCtx: 4096, nThreads: 1 });
        let n = 0;
        c.submit({ tokens: m.tokenize('Hi', true, false), nPredict: 4000, ignoreEos: true,
          sampling: ${JSON.stringify(GREEDY)} }, (e) => {
          if (e.type === 'token' && ++n === 8) process.stdout.write('generating\\n');
          if (e.type !== 'token') { process.stdout.write('ended ' + JSON.stringify(e) + '\\n'); process.exit(0); }
        });
      });`;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (stdout.includes('generating')) resolve();
      });
      void exited.then(() => resolve());
    });
    await own.kill(0);
    const { signal } = await exited;
    await own.stop();
    assert.equal(signal, 'SIGABRT', `stdout: ${stdout}\nstderr: ${stderr}`);
    assert.match(stderr, /Remote RPC server crashed or returned malformed response/);
  });
});
