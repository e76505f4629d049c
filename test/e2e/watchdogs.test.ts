import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureTestModels, TINY_LLAMA_SPM, TINY_QWEN2, TINY_QWEN2_TOOLS } from '../utils/models';
import { createModel, postJson, readNdjsonStream } from '../utils/ndjson';
import { alive, runnersOf } from '../utils/processes';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const LOAD_TIMEOUT = 'timed out waiting for llama runner to start - progress 0.00 - ';
const HUNG =
  /^llama runner process has terminated: the runner stopped responding \(no progress for [\d.]+ s with 1 request in flight\) and was killed$/;

// Issue 32 item 5: hangs are detected. Real runner processes with the child's fault hook (LLAMAD_TEST_RUNNER_FAULT,
// here config.runnerFaults): `stuck` never finishes loading, `hung` stops making progress after its first token.
describe('watchdogs over real runner processes', { skip: addon.skip }, () => {
  let t: TestApp;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({
      binding: addon.binding,
      config: {
        numParallel: 1,
        contextLength: 256,
        loadTimeoutMs: 6000,
        runnerHeartbeatTimeoutMs: 2000,
        runnerFaults: { 'stuck:latest': 'load-hang', 'hung:latest': 'stall' },
      },
    });
    for (const [model, file] of [
      ['good', TINY_QWEN2],
      ['stuck', TINY_LLAMA_SPM],
      ['hung', TINY_QWEN2_TOOLS],
    ]) {
      await createModel(t.baseUrl, model, `FROM ${file}\n`);
    }
  });

  after(async () => {
    await t?.close();
  });

  it('a stuck load fails with Ollama’s timeout error and its process is killed; another model loads and answers meanwhile', async () => {
    let stuckAnswered = false;
    const stuck = postJson(`${t.baseUrl}/api/generate`, { model: 'stuck', prompt: 'hi', stream: false }).then((r) => {
      stuckAnswered = true;
      return r;
    });
    // Wait until the stuck model's runner process exists (its load is in flight).
    const deadline = Date.now() + 10_000;
    while (runnersOf(process.pid).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const [stuckPid] = runnersOf(process.pid);
    assert.ok(stuckPid !== undefined, 'the stuck load started its runner process');

    const good = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'good',
      prompt: 'hi',
      stream: false,
      options: { num_predict: 4 },
    });
    assert.equal(good.status, 200, await good.clone().text());
    assert.equal(((await good.json()) as { done: boolean }).done, true);
    assert.equal(stuckAnswered, false, 'good loaded and answered while the stuck load was still pending');

    const res = await stuck;
    assert.equal(res.status, 500);
    assert.deepEqual(await res.json(), { error: LOAD_TIMEOUT });
    assert.equal(alive(stuckPid), false, 'the stuck runner process was killed');
    const ps = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as { models: { name: string }[] };
    assert.deepEqual(
      ps.models.map((m) => m.name),
      ['good:latest'],
    );
    assert.equal((await fetch(`${t.baseUrl}/api/version`)).status, 200);
  });

  it('a hung runner is killed: its stream ends with the runner error; the next request reloads and answers', async () => {
    const before = new Set(runnersOf(process.pid));
    const stream = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'hung',
      prompt: 'Tell me a story',
      options: { temperature: 0, num_predict: 64 },
    });
    assert.equal(stream.status, 200);
    const records = await readNdjsonStream(stream);
    assert.ok(records.length >= 2, JSON.stringify(records));
    assert.equal(records[0].done, false, 'the first token came');
    const last = records.at(-1) as { error?: string };
    assert.match(last.error ?? '', HUNG);
    const hungPids = runnersOf(process.pid).filter((pid) => !before.has(pid));
    assert.deepEqual(hungPids, [], 'the hung runner process is gone');

    const again = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'hung',
      prompt: 'hi',
      stream: false,
      options: { num_predict: 4 },
    });
    assert.equal(again.status, 200, await again.clone().text());
    assert.equal(((await again.json()) as { done: boolean }).done, true);
    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    assert.match(metrics, /llamad_runner_crashes_total\{model="hung:latest",cause="hang"\} 1/);
    assert.match(metrics, /llamad_runner_restarts_total\{model="hung:latest"\} 1/);
  });
});
