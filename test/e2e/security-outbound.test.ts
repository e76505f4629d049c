import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RPC_NOT_ALLOWED_MESSAGE } from '../../src/common/options';
import { SERVER_PATH_REFUSED_MESSAGE } from '../../src/models/model-create.types';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

const ALLOWED = '10.0.0.5:50052';

// Issue 23 item 3: outbound reach only where the operator allows it; server paths only for trusted local requesters.
describe('PARAMETER rpc is limited to LLAMAD_RPC_SERVERS (FakeBinding)', () => {
  let t: TestApp;
  let gguf: string;

  before(async () => {
    t = await createTestApp({ binding: new FakeBinding(), config: { rpcServers: [ALLOWED] } });
    gguf = join(t.modelsDir, 'm.gguf');
    await writeTinyGguf(gguf, { chatTemplate: '{{ chatml }}' });
  });

  after(() => t.close());

  const create = (body: object) => postJson(`${t.baseUrl}/api/create`, { stream: false, ...body });

  it('a worker outside the allow-list is refused with one text, whatever the address', async () => {
    for (const workers of ['10.0.0.6:50052', 'evil.example:1', '127.0.0.1:22', `${ALLOWED},169.254.169.254:80`]) {
      const res = await create({ model: 'x', modelfile: `FROM ${gguf}\nPARAMETER rpc ${workers}\n` });
      assert.equal(res.status, 400, workers);
      assert.deepEqual(await res.json(), { error: RPC_NOT_ALLOWED_MESSAGE }, workers);
    }
    // The JSON form's `parameters` are decoded like request options: `rpc` is Modelfile-only and ignored there.
    const json = await create({ model: 'json', from: gguf, parameters: { rpc: ['1.2.3.4:5'] } });
    assert.equal(json.status, 200);
    const show = await postJson(`${t.baseUrl}/api/show`, { model: 'json' });
    assert.doesNotMatch(((await show.json()) as { parameters?: string }).parameters ?? '', /rpc/);
  });

  it('an allowed worker, and `none`, are accepted', async () => {
    for (const [model, rpc] of [
      ['ok-rpc', ALLOWED.toUpperCase()],
      ['ok-none', 'none'],
    ]) {
      const res = await create({ model, modelfile: `FROM ${gguf}\nPARAMETER rpc ${rpc}\n` });
      assert.equal(res.status, 200, await res.text());
    }
  });

  it('a model created earlier cannot bypass it: its parameters are checked again when it is used', async () => {
    const res = await create({ model: 'old', modelfile: `FROM ${gguf}\nPARAMETER rpc ${ALLOWED}\n` });
    assert.equal(res.status, 200);
    t.config.rpcServers = []; // the operator removed the worker
    try {
      const run = await postJson(`${t.baseUrl}/api/generate`, { model: 'old', prompt: 'hi', stream: false });
      assert.equal(run.status, 400);
      assert.deepEqual(await run.json(), { error: RPC_NOT_ALLOWED_MESSAGE });
    } finally {
      t.config.rpcServers = [ALLOWED];
    }
  });
});

describe('server paths in FROM/ADAPTER: loopback, no Origin, and no API keys unless allowed (FakeBinding)', () => {
  it('a loopback request that carries an Origin (even an allowed one) cannot name server files', async () => {
    const t = await createTestApp({ binding: new FakeBinding() });
    try {
      const gguf = join(t.modelsDir, 'm.gguf');
      await writeTinyGguf(gguf, { chatTemplate: '{{ chatml }}' });
      const body = { model: 'x', modelfile: `FROM ${gguf}\n`, stream: false };
      const browser = await postJson(`${t.baseUrl}/api/create`, body, {
        headers: { 'content-type': 'application/json', origin: 'http://localhost:3000' },
      });
      assert.equal(browser.status, 400);
      assert.deepEqual(await browser.json(), { error: SERVER_PATH_REFUSED_MESSAGE });
      assert.equal((await postJson(`${t.baseUrl}/api/create`, body)).status, 200, 'no Origin: allowed');
    } finally {
      await t.close();
    }
  });

  it('with API keys, server paths are off unless LLAMAD_ALLOW_SERVER_PATHS=1', async () => {
    for (const allowServerPaths of [false, true]) {
      const t = await createTestApp({ binding: new FakeBinding(), config: { apiKeys: ['k'], allowServerPaths } });
      try {
        const gguf = join(t.modelsDir, 'm.gguf');
        await writeTinyGguf(gguf, { chatTemplate: '{{ chatml }}' });
        const res = await postJson(
          `${t.baseUrl}/api/create`,
          { model: 'x', modelfile: `FROM ${gguf}\n`, stream: false },
          { headers: { 'content-type': 'application/json', authorization: 'Bearer k' } },
        );
        if (allowServerPaths) assert.equal(res.status, 200, await res.text());
        else assert.deepEqual([res.status, await res.json()], [400, { error: SERVER_PATH_REFUSED_MESSAGE }]);
      } finally {
        await t.close();
      }
    }
  });
});
