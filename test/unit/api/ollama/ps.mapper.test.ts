import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ListedModel, ModelsService } from '../../../../src/models';
import { expiresAt, listProcessModels } from '../../../../src/api/ollama/ps.mapper';
import type { LoadedRunnerInfo, SchedulerService } from '../../../../src/scheduler/scheduler.service';
import type { LoadingRunnerInfo } from '../../../../src/scheduler/load-events';
import { spec } from '../../../utils/fake-runner';

const NOW = Date.UTC(2026, 0, 1);

function runner(path: string, over: Partial<LoadedRunnerInfo> = {}): LoadedRunnerInfo {
  return {
    spec: spec({ modelPath: path, numCtx: 1024 }),
    refCount: 0,
    keepAliveMs: 300_000,
    sizeBytes: 123,
    sizeVramBytes: 0,
    expired: false,
    ...over,
  };
}

function controller(loaded: LoadedRunnerInfo[], loading: LoadingRunnerInfo[] = []) {
  const scheduler = { loaded: () => loaded, loading: () => loading } as unknown as SchedulerService;
  const models = {
    findByWeights: (p: string): Promise<ListedModel | null> =>
      Promise.resolve(
        p === '/gone'
          ? null
          : {
              name: `m${p.slice(-1)}:latest`,
              modifiedAt: new Date(NOW),
              size: 1,
              digest: `d${p.slice(-1)}`,
              details: {
                parent_model: '',
                format: 'gguf',
                family: 'llama',
                families: ['llama'],
                parameter_size: '1M',
                quantization_level: 'F16',
              },
            },
      ),
  } as unknown as ModelsService;
  return { ps: { ps: () => listProcessModels(scheduler, models) } };
}

describe('listProcessModels (GET /api/ps)', () => {
  it('lists models still loading after the loaded ones, with loading and load_progress (beyond Ollama)', async () => {
    const loading: LoadingRunnerInfo = {
      spec: spec({ modelPath: '/b/4', numCtx: 2048 }),
      name: 'm4:latest',
      progress: 0.42,
      sizeBytes: 999,
      keepAliveMs: 300_000,
    };
    const before = Date.now();
    const { models } = await controller([runner('/b/1')], [loading]).ps.ps();
    assert.deepEqual(
      models.map((m) => [m.name, m.loading, m.load_progress]),
      [
        ['m1:latest', undefined, undefined],
        ['m4:latest', true, 0.42],
      ],
    );
    assert.ok(!('loading' in models[0]) && !('load_progress' in models[0]), 'a loaded row keeps Ollama’s fields only');
    const row = models[1];
    assert.deepEqual(
      { ...row, expires_at: undefined, details: undefined },
      {
        name: 'm4:latest',
        model: 'm4:latest',
        size: 999,
        digest: 'd4',
        details: undefined,
        expires_at: undefined,
        size_vram: 0,
        context_length: 2048,
        loading: true,
        load_progress: 0.42,
      },
    );
    assert.ok(Date.parse(row.expires_at) >= before + 300_000);
  });

  it('answers {models: []} when nothing is loaded', async () => {
    assert.deepEqual(await controller([]).ps.ps(), { models: [] });
  });

  it('lists loaded runners longest remaining time first, with Ollama’s wire fields', async () => {
    const { ps } = controller([
      runner('/b/1', { expiresAt: new Date(Date.now() + 60_000) }),
      runner('/b/2', { keepAliveMs: Infinity }),
      runner('/b/3', { refCount: 1, keepAliveMs: 600_000 }),
      runner('/gone', { expiresAt: new Date(Date.now() + 1000) }),
    ]);
    const { models } = await ps.ps();
    assert.deepEqual(
      models.map((m) => m.name),
      ['m2:latest', 'm3:latest', 'm1:latest', '/gone'],
    );
    const [forever, busy] = models;
    assert.ok(new Date(forever.expires_at).getUTCFullYear() > 2300);
    assert.match(busy.expires_at, /Z$/);
    assert.deepEqual(
      { ...busy, expires_at: undefined },
      {
        name: 'm3:latest',
        model: 'm3:latest',
        size: 123,
        digest: 'd3',
        details: busy.details,
        expires_at: undefined,
        size_vram: 0,
        context_length: 1024,
      },
    );
    assert.equal(models[3].digest, '');
  });

  it('reports size and size_vram as the scheduler measured them (backend buffers)', async () => {
    const { ps } = controller([runner('/b/1', { sizeBytes: 9_000, sizeVramBytes: 7_000 })]);
    const [model] = (await ps.ps()).models;
    assert.equal(model.size, 9_000);
    assert.equal(model.size_vram, 7_000);
    assert.equal(model.devices, undefined);
  });

  it('lists where the bytes live (beyond Ollama: devices, RPC workers with their endpoint)', async () => {
    const devices = [
      { name: 'RPC0[10.0.0.2:50052]', bytes: 600, endpoint: '10.0.0.2:50052' },
      { name: 'CPU', bytes: 400 },
    ];
    const { ps } = controller([runner('/b/1', { sizeBytes: 1_000, devices })]);
    const [model] = (await ps.ps()).models;
    assert.equal(model.size_vram, 0);
    assert.deepEqual(model.devices, [
      { name: 'RPC0[10.0.0.2:50052]', size: 600, endpoint: '10.0.0.2:50052' },
      { name: 'CPU', size: 400 },
    ]);
  });

  it('reports the slots and KV cells in use (beyond Ollama: parallel), absent without usage', async () => {
    const usage = {
      slotsBusy: 3,
      queuedTasks: 1,
      kvCellsTotal: 1024,
      kvCellsUsed: 700,
      slotsWaiting: 1,
      threads: 2,
      ramCache: { entries: 2, bytes: 4096, hits: 5, tokens: 900 },
    };
    const shared = runner('/b/1', {
      spec: spec({ modelPath: '/b/1', numCtx: 1024, numParallel: 4, kvUnified: true, cacheRamBytes: 8192 }),
    });
    const { ps } = controller([{ ...shared, usage }, runner('/b/2')]);
    const models = (await ps.ps()).models;
    const byName = new Map(models.map((m) => [m.name, m]));
    assert.deepEqual(byName.get('m1:latest')?.parallel, {
      slots: 4,
      slots_busy: 3,
      slots_waiting: 1,
      queued: 1,
      kv_shared: true,
      kv_cells: 1024,
      kv_cells_used: 700,
      threads: 2,
      ram_cache: { entries: 2, bytes: 4096, hits: 5, tokens: 900, max_bytes: 8192 },
    });
    assert.equal(byName.get('m2:latest')?.parallel, undefined);
  });

  it('computes expires_at like Ollama: timer, now + keep-alive in use, now for 0, ~292 years for forever', () => {
    const at = new Date(NOW + 5);
    assert.equal(expiresAt(runner('/x', { expiresAt: at }), NOW), at);
    assert.equal(expiresAt(runner('/x', { refCount: 1 }), NOW).getTime(), NOW + 300_000);
    assert.equal(expiresAt(runner('/x', { keepAliveMs: 0 }), NOW).getTime(), NOW);
    const forever = expiresAt(runner('/x', { keepAliveMs: Infinity }), NOW);
    assert.equal(forever.getUTCFullYear(), 2318);
  });
});
