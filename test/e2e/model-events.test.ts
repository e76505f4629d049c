import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeBadHeadsModel } from '../utils/bad-model';
import { EventCollector } from '../utils/event-stream';
import { ensureTestModels, TINY_LLAMA_SPM, TINY_QWEN2 } from '../utils/models';
import { createModel, postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

interface PsRow {
  name: string;
  model: string;
  size: number;
  digest: string;
  expires_at: string;
  size_vram: number;
  context_length: number;
  loading?: boolean;
  load_progress?: number;
}

// Issue 36 item 2: GET /api/events over real runner processes (the real addon, tiny models), read with the official
// EventSource semantics; /api/ps lists a load in flight (the `load-hang` runner fault keeps it loading).
describe('model events: loads, failed loads, /api/ps while loading, Last-Event-ID', { skip: addon.skip }, () => {
  let t: TestApp;
  let events: EventCollector;

  const generate = (model: string, extra: object = {}) =>
    postJson(`${t.baseUrl}/api/generate`, {
      model,
      prompt: 'hi',
      stream: false,
      options: { num_predict: 2 },
      ...extra,
    });

  before(async () => {
    ensureTestModels();
    t = await createTestApp({
      binding: addon.binding,
      config: {
        numParallel: 1,
        contextLength: 256,
        loadTimeoutMs: 4000,
        runnerFaults: { 'stuck:latest': 'load-hang' },
        allowServerPaths: true,
      },
    });
    await createModel(t.baseUrl, 'good', `FROM ${TINY_QWEN2}\n`);
    await createModel(t.baseUrl, 'stuck', `FROM ${TINY_LLAMA_SPM}\n`);
    await createModel(t.baseUrl, 'bad', `FROM ${await makeBadHeadsModel(t.modelsDir)}\n`);
    events = new EventCollector(`${t.baseUrl}/api/events`);
    await events.opened();
  });

  after(async () => {
    events?.close();
    await t?.close();
  });

  it('answers text/event-stream without caching; a malformed model filter is a 400', async () => {
    const controller = new AbortController();
    const res = await fetch(`${t.baseUrl}/api/events`, { signal: controller.signal });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    const first = await res.body!.getReader().read();
    assert.equal(new TextDecoder().decode(first.value), 'retry: 2000\n\n');
    controller.abort();
    const bad = await fetch(`${t.baseUrl}/api/events?model=${encodeURIComponent('a b')}`);
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), { error: 'invalid model name' });
  });

  it('a load: load.start, monotone load.progress reaching 1, load.ready; keep_alive 0 unloads with `requested`', async () => {
    const from = events.events.length;
    const res = await generate('good');
    assert.equal(res.status, 200, await res.clone().text());
    await events.waitFor((e) => e.type === 'load.ready' && e.data.model === 'good:latest', 30_000, from);
    const mine = events.events.slice(from).filter((e) => e.data.model === 'good:latest');
    const types = mine.map((e) => e.type);
    assert.equal(types[0], 'load.start');
    assert.equal(types.at(-1), 'load.ready');
    const progress = mine.filter((e) => e.type === 'load.progress').map((e) => e.data.progress as number);
    assert.ok(progress.length >= 1, 'at least one load.progress');
    assert.deepEqual(
      types.slice(1, -1),
      progress.map(() => 'load.progress'),
      'only progress between start and ready',
    );
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i] > progress[i - 1], `monotone: ${progress}`);
    assert.equal(progress.at(-1), 1);
    assert.ok((mine.at(-1)!.data.duration_ns as number) > 0);
    // Ids increase within the epoch, times are RFC 3339.
    const seqs = mine.map((e) => Number(e.id.split('-')[1]));
    for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i] > seqs[i - 1]);
    assert.ok(!Number.isNaN(Date.parse(mine[0].data.time)));

    const unload = await postJson(`${t.baseUrl}/api/generate`, { model: 'good', keep_alive: 0 });
    assert.equal(unload.status, 200);
    const gone = await events.waitFor((e) => e.type === 'unload' && e.data.model === 'good:latest', 30_000, from);
    assert.equal(gone.data.reason, 'requested');
  });

  it('a model whose load aborts llama.cpp: load.failed with the error; the daemon keeps serving', async () => {
    const from = events.events.length;
    const res = await generate('bad');
    assert.equal(res.status, 500);
    const { error } = (await res.json()) as { error: string };
    const failed = await events.waitFor((e) => e.type === 'load.failed' && e.data.model === 'bad:latest', 30_000, from);
    assert.equal(failed.data.error, error);
    assert.equal(events.of('bad:latest').filter((e) => e.type === 'load.ready').length, 0);
    const good = await generate('good');
    assert.equal(good.status, 200, await good.clone().text());
  });

  it('/api/ps lists a model still loading with its progress; its load times out with load.failed', async () => {
    const from = events.events.length;
    const pending = generate('stuck');
    let row: PsRow | undefined;
    const deadline = Date.now() + 10_000;
    while (!row && Date.now() < deadline) {
      const ps = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as { models: PsRow[] };
      row = ps.models.find((m) => m.name === 'stuck:latest');
      if (!row) await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(row, '/api/ps showed the loading model');
    assert.equal(row.loading, true);
    assert.equal(row.load_progress, 0); // the load-hang fault never reports progress
    assert.equal(row.model, 'stuck:latest');
    assert.equal(row.context_length, 256);
    assert.equal(row.size_vram, 0);
    assert.ok(row.size > 0);
    assert.match(row.digest, /^[0-9a-f]{64}$/);
    assert.ok(!Number.isNaN(Date.parse(row.expires_at)));
    // A loaded model's row has neither field.
    const ps = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as { models: PsRow[] };
    const good = ps.models.find((m) => m.name === 'good:latest');
    assert.ok(good && !('loading' in good) && !('load_progress' in good));

    const res = await pending;
    assert.equal(res.status, 500);
    const failed = await events.waitFor(
      (e) => e.type === 'load.failed' && e.data.model === 'stuck:latest',
      10_000,
      from,
    );
    assert.match(failed.data.error as string, /^timed out waiting for llama runner to start - progress 0\.00/);
    const after = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as { models: PsRow[] };
    assert.equal(
      after.models.some((m) => m.name === 'stuck:latest'),
      false,
    );
  });

  it('a model= filter gets only that model', async () => {
    const only = new EventCollector(`${t.baseUrl}/api/events?model=good`);
    try {
      await only.opened();
      await postJson(`${t.baseUrl}/api/generate`, { model: 'good', keep_alive: 0 });
      await generate('bad'); // fails: events of bad:latest, not for this stream
      await generate('good');
      await only.waitFor((e) => e.type === 'load.ready');
      assert.ok(only.events.length > 0);
      assert.deepEqual([...new Set(only.events.map((e) => e.data.model))], ['good:latest']);
    } finally {
      only.close();
    }
  });

  it('a reconnect with Last-Event-ID replays exactly the events missed; another epoch replays nothing', async () => {
    const client = new EventCollector(`${t.baseUrl}/api/events`);
    try {
      await client.opened();
      await createModel(t.baseUrl, 'seen', `FROM ${TINY_QWEN2}\n`);
      const lastSeen = await client.waitFor((e) => e.type === 'create.step' && e.data.status === 'success');
      client.cut(); // a network failure: EventSource reconnects after `retry` (2 s) with Last-Event-ID
      await createModel(t.baseUrl, 'missed', `FROM ${TINY_QWEN2}\n`);
      const createdAt = Date.now();
      const missed = await client.waitFor((e) => e.data.model === 'missed:latest' && e.data.status === 'success');
      assert.equal(client.lastEventIds.length, 2, 'one reconnection');
      assert.equal(client.lastEventIds[1], lastSeen.id);
      assert.ok(client.connectedAt[1] >= createdAt, 'the missed events were published while disconnected');
      const afterCut = client.events.slice(client.events.indexOf(lastSeen) + 1);
      assert.ok(afterCut.length > 1);
      assert.ok(
        afterCut.every((e) => e.data.model === 'missed:latest'),
        'nothing stale is replayed',
      );
      assert.equal(afterCut[0].data.status, 'parsing modelfile');
      assert.equal(afterCut.at(-1), missed);
      const ids = client.events.map((e) => e.id);
      assert.equal(new Set(ids).size, ids.length, 'no event twice');
    } finally {
      client.close();
    }

    const epoch = events.events[0].id.split('-')[0];
    const replayed = async (lastEventId: string): Promise<string> => {
      const controller = new AbortController();
      const res = await fetch(`${t.baseUrl}/api/events`, {
        headers: { 'last-event-id': lastEventId },
        signal: controller.signal,
      });
      const reader = res.body!.getReader();
      let text = '';
      const stop = setTimeout(() => controller.abort(), 500);
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          text += new TextDecoder().decode(value);
        }
      } catch {
        // aborted: what arrived is all
      } finally {
        clearTimeout(stop);
      }
      return text;
    };
    assert.equal(await replayed('0123456789ab-1'), 'retry: 2000\n\n');
    assert.match(await replayed(`${epoch}-0`), /event: create\.step/, 'the same epoch replays the ring');
  });
});
