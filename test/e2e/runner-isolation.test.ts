import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeBadHeadsModel } from '../utils/bad-model';
import { REPO_ROOT } from '../../src/config';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { createModel, postJson, readNdjsonStream } from '../utils/ndjson';
import { alive, runnersOf } from '../utils/processes';
import { realAddon } from '../utils/real-addon';
import { freePort } from '../utils/registry-server';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
// Without flash attention (its default on the CPU) the attention's first product K·Q is the ggml_mul_mat that asserts.
const GGML_ASSERT = 'llama runner process has terminated: GGML_ASSERT(ggml_can_mul_mat(a, b)) failed';

// Issue 22: one bad model never takes the service down. Each model runs in its own runner process (the default
// with the compiled addon); a GGUF that aborts llama.cpp (4 query heads over 3 KV heads: GGML_ASSERT) ends only its
// own requests, with Ollama's `llama runner process has terminated: …` text.
describe('runner processes isolate a model that aborts llama.cpp', { skip: addon.skip }, () => {
  let t: TestApp;
  let dir: string;

  before(async () => {
    ensureTestModels();
    dir = await mkdtemp(join(tmpdir(), 'llamad-bad-'));
    const bad = await makeBadHeadsModel(dir);
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 2, contextLength: 256 } });
    for (const [model, file] of [
      ['good', TINY_QWEN2],
      ['bad', bad],
    ]) {
      await createModel(t.baseUrl, model, `FROM ${file}\n`);
    }
  });

  after(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the bad model answers 500 with the assert text; a stream on another model completes; the daemon lives', async () => {
    const stream = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'good',
      prompt: 'Tell me a story',
      options: { temperature: 0, num_predict: 64 },
    });
    assert.equal(stream.status, 200);
    let firstChunk!: () => void;
    const gotFirst = new Promise<void>((r) => (firstChunk = r));
    const records = readNdjsonStream(stream, () => firstChunk());
    await gotFirst;

    const res = await postJson(`${t.baseUrl}/api/generate`, { model: 'bad', prompt: 'hi', stream: false });
    assert.equal(res.status, 500);
    assert.deepEqual(await res.json(), { error: GGML_ASSERT });

    const done = await records;
    assert.equal(done.at(-1)?.done, true, 'the other stream completed');
    assert.equal(
      done.some((r) => 'error' in r),
      false,
    );
    assert.equal((await fetch(`${t.baseUrl}/api/version`)).status, 200);

    const openai = await postJson(`${t.baseUrl}/v1/chat/completions`, {
      model: 'bad',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(openai.status, 500);
    const body = (await openai.json()) as { error: { message: string } };
    assert.equal(body.error.message, GGML_ASSERT);

    // Third early death within a minute: the model is refused at once for a while, with the same text.
    assert.equal(
      (await postJson(`${t.baseUrl}/api/generate`, { model: 'bad', prompt: 'x', stream: false })).status,
      500,
    );
    const started = Date.now();
    const refused = await postJson(`${t.baseUrl}/api/generate`, { model: 'bad', prompt: 'x', stream: false });
    assert.equal(refused.status, 500);
    assert.deepEqual(await refused.json(), { error: GGML_ASSERT });
    assert.ok(Date.now() - started < 500, 'answered without starting a runner');

    const good = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'good',
      prompt: 'hi',
      stream: false,
      options: { num_predict: 4 },
    });
    assert.equal(good.status, 200);
    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    assert.match(metrics, /llamad_runner_crashes_total\{model="bad:latest",cause="abort"\} 3/);
    assert.match(metrics, /llamad_runner_starts_total\{model="good:latest"\} 1/);
  });

  it('kill -9 of a runner mid-stream ends that stream with the error; the next request loads it again', async () => {
    const stream = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'good',
      prompt: 'Tell me a long story',
      options: { temperature: 0, num_predict: 2000, num_ctx: 256 },
    });
    assert.equal(stream.status, 200);
    let firstChunk!: () => void;
    const gotFirst = new Promise<void>((r) => (firstChunk = r));
    const records = readNdjsonStream(stream, () => firstChunk());
    await gotFirst;
    const runners = runnersOf(process.pid);
    assert.equal(runners.length, 1, `one runner process (good), found ${runners.join(', ')}`);
    // /api/ps names the runner process (beyond Ollama: `pid`), as the web UI's Running page shows it.
    const loaded = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as { models: { pid?: number }[] };
    assert.deepEqual(
      loaded.models.map((m) => m.pid),
      [runners[0]],
    );
    process.kill(runners[0], 'SIGKILL');
    const all = await records;
    assert.deepEqual(all.at(-1), { error: 'llama runner process has terminated: signal: killed' });

    const ps = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as { models: unknown[] };
    assert.equal(ps.models.length, 0, 'the dead runner was unloaded at once');
    const again = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'good',
      prompt: 'hi',
      stream: false,
      options: { num_predict: 4, num_ctx: 256 },
    });
    assert.equal(again.status, 200);
    const [fresh] = runnersOf(process.pid);
    assert.ok(fresh !== undefined && fresh !== runners[0], 'a fresh runner process');
    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    assert.match(metrics, /llamad_runner_restarts_total\{model="good:latest"\} 1/);
    assert.match(metrics, /llamad_runner_crashes_total\{model="good:latest",cause="signal"\} 1/);
  });
});

describe('a daemon killed with SIGKILL leaves no runner process', { skip: addon.skip }, () => {
  it('its runner exits once the IPC channel closes', async () => {
    ensureTestModels();
    const models = await mkdtemp(join(tmpdir(), 'llamad-orphan-'));
    const port = await freePort();
    const daemon = spawn(process.execPath, [join(REPO_ROOT, 'dist', 'src', 'main.js')], {
      env: { ...process.env, OLLAMA_HOST: `127.0.0.1:${port}`, OLLAMA_MODELS: models, LLAMAD_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const base = `http://127.0.0.1:${port}`;
    try {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const up = await fetch(`${base}/api/version`).then(
          (r) => r.ok,
          () => false,
        );
        if (up) break;
        assert.ok(Date.now() < deadline && daemon.exitCode === null, 'daemon started');
        await new Promise((r) => setTimeout(r, 50));
      }
      const created = await postJson(`${base}/api/create`, { model: 'good', modelfile: `FROM ${TINY_QWEN2}\n` });
      assert.equal(created.status, 200);
      await created.text();
      const res = await postJson(`${base}/api/generate`, {
        model: 'good',
        prompt: 'hi',
        stream: false,
        options: { num_predict: 2, num_ctx: 256 },
      });
      assert.equal(res.status, 200, await res.clone().text());
      const runners = runnersOf(daemon.pid!);
      assert.equal(runners.length, 1);
      const exited = new Promise((r) => daemon.once('exit', r));
      daemon.kill('SIGKILL');
      await exited;
      const gone = Date.now() + 5000;
      while (runners.some(alive) && Date.now() < gone) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(runners.filter(alive), [], 'no orphaned runner');
    } finally {
      if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill('SIGKILL');
      await rm(models, { recursive: true, force: true });
    }
  });
});
