import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { REPO_ROOT } from '../../src/config';
import { ensureTestModels, TINY_BERT, TINY_QWEN2 } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const GREEDY = { temperature: 0, seed: 42, num_predict: 4 };

interface PsWire {
  models: Array<{
    name: string;
    model: string;
    size: number;
    digest: string;
    details: { format: string; family: string };
    expires_at: string;
    size_vram: number;
    context_length: number;
  }>;
}

// /api/ps, copy, delete, show capabilities and create-time template autodetection, end to end over HTTP with the
// official `ollama` client, the REAL addon and the tiny generated models. Skips (with the reason) without the addon.
describe('model management with the real addon', { skip: addon.skip }, () => {
  let t: TestApp;
  let ollama: Ollama;

  const ps = async (): Promise<PsWire> => {
    const res = await fetch(`${t.baseUrl}/api/ps`);
    assert.equal(res.status, 200);
    return (await res.json()) as PsWire;
  };
  /** Polls /api/ps until `check` holds (unloads finish asynchronously). */
  const eventually = async (check: (p: PsWire) => boolean): Promise<PsWire> => {
    for (let i = 0; i < 100; i++) {
      const p = await ps();
      if (check(p)) return p;
      await new Promise((r) => setTimeout(r, 20));
    }
    return ps();
  };
  const blobs = async () => (await readdir(join(t.modelsDir, 'blobs'))).filter((f) => !f.startsWith('.'));

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 512 } });
    ollama = new Ollama({ host: t.baseUrl });
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: 'tiny',
      modelfile: `FROM ${TINY_QWEN2}\nPARAMETER temperature 0`,
      stream: false,
    });
    assert.equal(res.status, 200);
  });

  after(() => t?.close());

  it('ps is empty before anything loads', async () => {
    assert.deepEqual(await ps(), { models: [] });
  });

  it('create from tiny-qwen2 autodetects ChatML: show has the chatml Go template and its stop tokens', async () => {
    const show = await ollama.show({ model: 'tiny' });
    const chatml = await readFile(join(REPO_ROOT, 'assets', 'ollama-templates', 'chatml.gotmpl'), 'utf8');
    assert.equal(show.template, chatml);
    assert.match(show.parameters, /stop\s+"<\|im_start\|>"/);
    assert.match(show.parameters, /stop\s+"<\|im_end\|>"/);
    assert.match(show.parameters, /temperature\s+0/);
    assert.match(show.modelfile, /TEMPLATE "+\{\{- range \.Messages \}\}<\|im_start\|>/);
    assert.deepEqual(show.capabilities, ['completion']);
  });

  it('ps lists a generated-with model: name, digest, details, UTC expires_at ≈ now + 5 m, size_vram 0', async () => {
    const before = Date.now();
    const gen = await ollama.generate({ model: 'tiny', prompt: 'Hi', options: GREEDY, stream: false });
    assert.equal(gen.done, true);
    const { models } = await ps();
    assert.equal(models.length, 1);
    const [m] = models;
    const tag = (await ollama.list()).models.find((x) => x.name === 'tiny:latest');
    assert.equal(m.name, 'tiny:latest');
    assert.equal(m.model, 'tiny:latest');
    assert.equal(m.digest, tag?.digest);
    assert.equal(m.details.format, 'gguf');
    assert.equal(m.size_vram, 0);
    assert.equal(m.context_length, 512);
    assert.ok(m.size > 45_000_000, `size ${m.size} covers at least the weights file`);
    assert.match(m.expires_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    const expires = Date.parse(m.expires_at);
    assert.ok(expires >= before + 5 * 60_000 - 1000 && expires <= Date.now() + 5 * 60_000 + 1000, m.expires_at);
    const viaClient = await ollama.ps();
    assert.equal(viaClient.models[0].name, 'tiny:latest');
  });

  it('keep_alive -1 shows a far-future expiry; keep_alive 0 unloads (ps empty afterwards)', async () => {
    await ollama.generate({ model: 'tiny', prompt: 'Hi', options: GREEDY, keep_alive: -1, stream: false });
    const forever = await ps();
    assert.ok(new Date(forever.models[0].expires_at).getUTCFullYear() > 2300, forever.models[0].expires_at);
    await ollama.generate({ model: 'tiny', prompt: 'Hi', options: GREEDY, keep_alive: 0, stream: false });
    assert.deepEqual(await eventually((p) => p.models.length === 0), { models: [] });
  });

  it('copy then delete the original: the copy still works, shared blobs stay, the last delete removes them', async () => {
    await ollama.copy({ source: 'TINY', destination: 'tiny-copy' });
    const original = await ollama.show({ model: 'tiny' });
    const copy = await ollama.show({ model: 'tiny-copy' });
    assert.equal(copy.template, original.template);
    const stored = await blobs();
    const res = await ollama.delete({ model: 'tiny' });
    assert.equal(res.status, 'success');
    assert.deepEqual((await blobs()).sort(), stored.sort(), 'every blob is shared with the copy');
    assert.deepEqual(
      (await ollama.list()).models.map((m) => m.name),
      ['tiny-copy:latest'],
    );
    const gen = await ollama.generate({ model: 'tiny-copy', prompt: 'Hi', options: GREEDY, stream: false });
    assert.equal(gen.done, true);
    assert.equal((await ps()).models[0].name, 'tiny-copy:latest');

    // Deleting the last user removes the blobs, and unloads the loaded runner.
    const raw = await fetch(`${t.baseUrl}/api/delete`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'tiny-copy' }),
    });
    assert.equal(raw.status, 200);
    assert.equal(await raw.text(), '');
    assert.deepEqual(await blobs(), []);
    assert.deepEqual(await eventually((p) => p.models.length === 0), { models: [] });
    assert.deepEqual((await ollama.list()).models, []);
  });

  it('copy and delete errors carry Ollama’s statuses and texts', async () => {
    const del = await fetch(`${t.baseUrl}/api/delete`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nope' }),
    });
    assert.equal(del.status, 404);
    assert.deepEqual(await del.json(), { error: "model 'nope' not found" });
    await assert.rejects(ollama.delete({ model: 'nope' }), { status_code: 404 });
    const bad = await fetch(`${t.baseUrl}/api/delete`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'a b' }),
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), { error: 'name "a b" is invalid' });
    const noSource = await postJson(`${t.baseUrl}/api/copy`, { source: 'nope', destination: 'x' });
    assert.equal(noSource.status, 404);
    assert.deepEqual(await noSource.json(), { error: 'model "nope" not found' });
    const badDest = await postJson(`${t.baseUrl}/api/copy`, { source: 'nope', destination: 'a:b:c' });
    assert.equal(badDest.status, 400);
    assert.deepEqual(await badDest.json(), { error: 'destination "a:b:c" is invalid' });
  });

  it('show and tags report capabilities for a chat model and the bert model', async () => {
    const chat = await postJson(`${t.baseUrl}/api/create`, {
      model: 'chat',
      modelfile: `FROM ${TINY_QWEN2}`,
      stream: false,
    });
    assert.equal(chat.status, 200);
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: 'bert',
      modelfile: `FROM ${TINY_BERT}`,
      stream: false,
    });
    assert.equal(res.status, 200);
    assert.deepEqual((await ollama.show({ model: 'chat' })).capabilities, ['completion']);
    assert.deepEqual((await ollama.show({ model: 'bert' })).capabilities, ['embedding']);
    const tags = (await fetch(`${t.baseUrl}/api/tags`).then((r) => r.json())) as {
      models: Array<{ name: string; capabilities?: string[] }>;
    };
    assert.deepEqual(Object.fromEntries(tags.models.map((m) => [m.name, m.capabilities])), {
      'bert:latest': ['embedding'],
      'chat:latest': ['completion'],
    });
  });
});
