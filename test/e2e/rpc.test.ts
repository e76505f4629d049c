import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { ensureTestModels, TINY_LLAMA_SPM, TINY_QWEN2 } from '../utils/models';
import { realAddon } from '../utils/real-addon';
import { RPC_SKIP, deadEndpoint, startRpcWorkers, type RpcWorkers } from '../utils/rpc-workers';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const GREEDY = { temperature: 0, seed: 42, num_predict: 16 };

interface PsModel {
  name: string;
  size: number;
  size_vram: number;
  devices?: { name: string; size: number; endpoint?: string }[];
}

// One model served across two loopback rpc-server workers through the daemon (Modelfile PARAMETER rpc), with the
// REAL addon: same greedy output as the local model, /api/ps devices, and a clean 500 for a dead worker.
describe('RPC workers through the daemon (PARAMETER rpc)', { skip: addon.skip || RPC_SKIP }, () => {
  let t: TestApp;
  let ollama: Ollama;
  let workers: RpcWorkers;
  let dead: string;

  const create = async (model: string, modelfile: string) => {
    const r = await ollama.create({ model, modelfile } as Parameters<Ollama['create']>[0]);
    assert.equal(r.status, 'success');
  };

  before(async () => {
    ensureTestModels();
    workers = await startRpcWorkers(2);
    dead = await deadEndpoint();
    // PARAMETER rpc may name only the operator's workers (LLAMAD_RPC_SERVERS; docs/security.md "Outbound reach").
    t = await createTestApp({
      binding: addon.binding,
      config: { numParallel: 1, contextLength: 512, rpcServers: [...workers.endpoints, dead] },
    });
    ollama = new Ollama({ host: t.baseUrl });
    await create('tiny-local', `FROM ${TINY_LLAMA_SPM}\nPARAMETER rpc none\n`);
    await create('tiny-rpc', `FROM ${TINY_LLAMA_SPM}\nPARAMETER rpc ${workers.endpoints.join(',')}\n`);
    await create('tiny-dead', `FROM ${TINY_LLAMA_SPM}\nPARAMETER rpc ${dead}\n`);
  });

  after(async () => {
    await t?.close();
    await workers?.stop();
  });

  it('generates the same greedy tokens over the workers as locally, and /api/ps shows where the layers are', async () => {
    const request = { prompt: 'Once upon a time', raw: true, options: GREEDY };
    const local = await ollama.generate({ model: 'tiny-local', ...request });
    const remote = await ollama.generate({ model: 'tiny-rpc', ...request });
    assert.equal(remote.eval_count, 16);
    assert.equal(remote.response, local.response);
    // Runners are keyed by weights (all three models share the blob): the RPC runner replaced the local one, and
    // /api/ps names it by one of the manifests that reference the blob.
    const ps = async () => ((await (await fetch(`${t.baseUrl}/api/ps`)).json()) as { models: PsModel[] }).models;
    const [rpc] = await ps();
    assert.ok(rpc?.devices, JSON.stringify(rpc));
    assert.equal(rpc.size_vram, 0, 'RPC workers’ bytes are not local VRAM');
    assert.deepEqual(
      rpc.devices
        .map((d) => d.endpoint)
        .filter(Boolean)
        .sort(),
      [...workers.endpoints].sort(),
    );
    assert.equal(
      rpc.devices.reduce((n, d) => n + d.size, 0),
      rpc.size,
      'devices add up to size',
    );
    await ollama.generate({ model: 'tiny-local', ...request });
    const [local0] = await ps();
    assert.deepEqual(
      local0?.devices?.map((d) => d.name),
      ['CPU'],
    );
  });

  it('show keeps PARAMETER rpc', async () => {
    const shown = await ollama.show({ model: 'tiny-rpc' });
    assert.match(shown.parameters ?? '', /^rpc\s+"127\.0\.0\.1:\d+"$/m);
  });

  it('answers 500 with the unreachable worker (no stack, no path) and lives on', async () => {
    const res = await fetch(`${t.baseUrl}/api/generate`, {
      method: 'POST',
      body: JSON.stringify({ model: 'tiny-dead', prompt: 'Hi', stream: false, options: GREEDY }),
    });
    assert.equal(res.status, 500);
    assert.deepEqual(await res.json(), { error: `rpc server ${dead} unreachable: Connection refused` });
    const stream = await fetch(`${t.baseUrl}/api/generate`, {
      method: 'POST',
      body: JSON.stringify({ model: 'tiny-dead', prompt: 'Hi', options: GREEDY }),
    });
    assert.equal(stream.status, 500);
    const again = await ollama.generate({ model: 'tiny-rpc', prompt: 'Hi', raw: true, options: GREEDY });
    assert.equal(again.eval_count, 16);
  });

  it('a worker that dies mid-stream ends the stream with an error line; the model is unloaded, the daemon lives on', async () => {
    const own = await startRpcWorkers(1);
    t.config.rpcServers.push(own.endpoints[0]);
    try {
      await create('tiny-one', `FROM ${TINY_LLAMA_SPM}\nPARAMETER rpc ${own.endpoints[0]}\n`);
      const res = await fetch(`${t.baseUrl}/api/generate`, {
        method: 'POST',
        body: JSON.stringify({
          model: 'tiny-one',
          prompt: 'Hi',
          raw: true,
          options: { temperature: 0, num_predict: 100_000, num_ctx: 512 },
        }),
      });
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      let killed = false;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
        if (!killed && text.includes('\n')) {
          killed = true;
          await own.kill(0);
        }
      }
      const lines = text
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { error?: string; done?: boolean });
      assert.deepEqual(lines[lines.length - 1], {
        error: `an error was encountered while running the model: rpc server ${own.endpoints[0]}: connection lost`,
      });
      assert.ok(lines.slice(0, -1).every((l) => l.done === false && !l.error));
      // The broken runner is unloaded once idle; the next request probes the dead worker: a clean 500.
      const ps = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as { models: PsModel[] };
      assert.deepEqual(ps.models, []);
      const res2 = await fetch(`${t.baseUrl}/api/generate`, {
        method: 'POST',
        body: JSON.stringify({ model: 'tiny-one', prompt: 'Hi', stream: false, options: GREEDY }),
      });
      assert.equal(res2.status, 500);
      assert.deepEqual(await res2.json(), { error: `rpc server ${own.endpoints[0]} unreachable: Connection refused` });
    } finally {
      await own.stop();
    }
    const local = await ollama.generate({ model: 'tiny-local', prompt: 'Hi', raw: true, options: GREEDY });
    assert.equal(local.eval_count, 16);
  });
});

// LLAMAD_RPC_SERVERS (config.rpcServers): every model without its own PARAMETER rpc uses the daemon's workers;
// `PARAMETER rpc none` opts out.
describe('RPC workers through the daemon (LLAMAD_RPC_SERVERS)', { skip: addon.skip || RPC_SKIP }, () => {
  let t: TestApp;
  let ollama: Ollama;
  let workers: RpcWorkers;

  before(async () => {
    ensureTestModels();
    workers = await startRpcWorkers(2);
    t = await createTestApp({
      binding: addon.binding,
      config: { numParallel: 1, contextLength: 512, rpcServers: workers.endpoints },
    });
    ollama = new Ollama({ host: t.baseUrl });
    for (const [model, modelfile] of [
      ['tiny', `FROM ${TINY_LLAMA_SPM}\n`],
      ['tiny-none', `FROM ${TINY_LLAMA_SPM}\nPARAMETER rpc none\n`],
      ['tiny-qwen', `FROM ${TINY_QWEN2}\n`],
    ]) {
      const r = await ollama.create({ model, modelfile } as Parameters<Ollama['create']>[0]);
      assert.equal(r.status, 'success');
    }
  });

  after(async () => {
    await t?.close();
    await workers?.stop();
  });

  it('puts the layers of a model without PARAMETER rpc on the daemon’s workers; rpc none keeps them local', async () => {
    const devices = async (model: string) => {
      await ollama.generate({ model, prompt: 'Hi', raw: true, options: GREEDY });
      const ps = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as { models: PsModel[] };
      return (ps.models[0]?.devices ?? []).map((d) => d.endpoint ?? d.name).sort();
    };
    assert.deepEqual(await devices('tiny'), ['CPU', ...workers.endpoints].sort());
    assert.deepEqual(await devices('tiny-none'), ['CPU']);
  });

  // Issue 32 item 7: each model runs in its own runner process, and an rpc-server serves one connection at a time, so
  // two models on the daemon's workers take turns (the daemon tracks the workers across runner processes,
  // src/scheduler/rpc-endpoints.ts) instead of the second one's load hanging or failing.
  it('two models on the same workers take turns, one after another and at once', async () => {
    // /api/ps names a runner by the first manifest of its weights, and tiny-none shares tiny's: so "not tiny-qwen".
    const holders = async () => {
      const ps = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as { models: PsModel[] };
      return ps.models.filter((m) => (m.devices ?? []).some((d) => d.endpoint)).map((m) => m.name);
    };
    for (const model of ['tiny', 'tiny-qwen', 'tiny']) {
      const r = await ollama.generate({ model, prompt: 'Hi', raw: true, options: GREEDY });
      assert.equal(r.eval_count, 16, model);
      const held = await holders();
      assert.equal(held.length, 1, `${model}: ${held.join(', ')}`);
      assert.equal(held[0] === 'tiny-qwen:latest', model === 'tiny-qwen', `${model}: ${held[0]}`);
    }
    const both = await Promise.all(
      ['tiny-qwen', 'tiny'].map((model) => ollama.generate({ model, prompt: 'Hi', raw: true, options: GREEDY })),
    );
    assert.deepEqual(
      both.map((r) => r.eval_count),
      [16, 16],
    );
    assert.equal((await holders()).length, 1);
  });
});
