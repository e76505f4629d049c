import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { createModel, postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

/** How long the gauges may take to show a cancelled generation's slot free (one decode step plus an IPC message). */
const REFRESH_BOUND_MS = 1000;

interface Gauges {
  slotsBusy: number;
  running: number;
  queued: number;
  kvCellsUsed: number;
  psSlotsBusy: number;
  psQueued: number;
  psKvCellsUsed: number;
}

/** The slot and request gauges of /metrics and /api/ps for model `tiny:latest`, scraped now. */
async function gauges(baseUrl: string): Promise<Gauges> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const sample = (series: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    assert.ok(line, `${series} in /metrics`);
    return Number(line.slice(series.length + 1));
  };
  const ps = (await (await fetch(`${baseUrl}/api/ps`)).json()) as {
    models: { name: string; parallel?: { slots_busy: number; queued: number; kv_cells_used: number } }[];
  };
  const parallel = ps.models.find((m) => m.name === 'tiny:latest')?.parallel;
  assert.ok(parallel, '/api/ps lists tiny:latest with its parallel section');
  const model = '{model="tiny:latest"}';
  return {
    slotsBusy: sample(`llamad_slots_busy${model}`),
    running: sample('llamad_requests_running'),
    queued: sample('llamad_requests_queued'),
    kvCellsUsed: sample(`llamad_kv_cache_cells_used${model}`),
    psSlotsBusy: parallel.slots_busy,
    psQueued: parallel.queued,
    psKvCellsUsed: parallel.kv_cells_used,
  };
}

const IDLE: Gauges = {
  slotsBusy: 0,
  running: 0,
  queued: 0,
  kvCellsUsed: 0,
  psSlotsBusy: 0,
  psQueued: 0,
  psKvCellsUsed: 0,
};

/** Scrapes until the gauges read idle or `boundMs` passed; the last reading and when it was taken. */
async function settle(baseUrl: string, boundMs: number): Promise<{ last: Gauges; ms: number }> {
  const started = Date.now();
  for (;;) {
    const last = await gauges(baseUrl);
    const ms = Date.now() - started;
    if (JSON.stringify(last) === JSON.stringify(IDLE) || ms > boundMs) return { last, ms };
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Issue 32: after a client disconnected mid-stream, `llamad_slots_busy` and /api/ps `slots_busy` stayed at 1 for good
// (the runner process's last usage snapshot was never refreshed, although the generation was cancelled).
describe(
  'slot and request gauges after a client leaves mid-stream (real addon, runner process)',
  { skip: addon.skip },
  () => {
    let t: TestApp;

    before(async () => {
      ensureTestModels();
      t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 8192 } });
      await createModel(t.baseUrl, 'tiny', `FROM ${TINY_QWEN2}`);
    });

    after(() => t?.close());

    for (const route of ['/api/generate', '/api/chat'] as const) {
      it(`${route}: busy while streaming, idle within ${REFRESH_BOUND_MS} ms of the disconnect`, async () => {
        const abort = new AbortController();
        const body =
          route === '/api/generate'
            ? { model: 'tiny', prompt: 'Count to a million.' }
            : { model: 'tiny', messages: [{ role: 'user', content: 'Count to a million.' }] };
        // Never ends on its own before the client leaves: sampling at temperature 1 over the whole 8192-cell slot.
        const res = await postJson(
          `${t.baseUrl}${route}`,
          { ...body, options: { num_predict: -1, temperature: 1, seed: 7 } },
          {
            signal: abort.signal,
          },
        );
        assert.equal(res.status, 200);
        const reader = res.body!.getReader();
        const first = await reader.read();
        assert.equal(first.done, false, 'a first chunk');
        const busy = await gauges(t.baseUrl);
        assert.equal(busy.slotsBusy, 1, 'the stream holds the slot');
        assert.equal(busy.psSlotsBusy, 1);
        assert.equal(busy.running, 1);
        abort.abort();
        await reader.cancel().catch(() => undefined);
        const { last, ms } = await settle(t.baseUrl, REFRESH_BOUND_MS);
        assert.deepEqual(last, IDLE, `gauges ${ms} ms after the disconnect`);
        // And they stay exact: nothing later brings the stale value back.
        await new Promise((r) => setTimeout(r, 300));
        assert.deepEqual(await gauges(t.baseUrl), IDLE);
      });
    }
  },
);
