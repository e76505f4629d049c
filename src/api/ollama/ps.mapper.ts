import { ModelsService, seesEveryModel } from '../../models';
import { LoadedRunnerInfo, SchedulerService } from '../../scheduler';
import type { ProcessModelWire, ProcessResponseWire } from './dto/ps-response.dto';

/** `details` of a runner whose weights no manifest names any more. */
const NO_DETAILS = {
  parent_model: '',
  format: 'gguf',
  family: '',
  families: null,
  parameter_size: '',
  quantization_level: '',
};

/** Go's time.Now().Add(math.MaxInt64): about 292 years ahead — what Ollama shows for keep-alive forever. */
const FOREVER_MS = Number(2n ** 63n - 1n) / 1e6;

/**
 * When a loaded runner leaves memory, as Ollama reports it (§3.7): the idle timer's time; while in use (or marked to
 * unload) now + keep-alive (0 → now); forever → ~292 years ahead.
 * @param now epoch ms.
 */
export function expiresAt(runner: Pick<LoadedRunnerInfo, 'expiresAt' | 'keepAliveMs'>, now: number): Date {
  if (runner.expiresAt) return runner.expiresAt;
  if (runner.keepAliveMs === Infinity) return new Date(now + FOREVER_MS);
  return new Date(now + Math.max(0, runner.keepAliveMs));
}

/**
 * The body of GET /api/ps (§3.7): the loaded runners (size and size_vram measured from the backend buffers where the
 * runner reports them), longest remaining time first, named by the manifest that
 * references their weights (else by blob path); `{"models": []}` when none. A caller limited to a model list sees
 * only runners whose weights a model of its list references. Beyond Ollama, models still loading follow, with
 * `loading: true` and `load_progress` in [0, 1] (their `size` is the load's memory estimate, `size_vram` 0,
 * `expires_at` the keep-alive they will start with).
 */
export async function listProcessModels(
  scheduler: SchedulerService,
  catalog: ModelsService,
): Promise<ProcessResponseWire> {
  const now = Date.now();
  const loaded = scheduler.loaded().map((r) => ({ runner: r, expires: expiresAt(r, now) }));
  loaded.sort((a, b) => b.expires.getTime() - a.expires.getTime());
  const models: ProcessModelWire[] = [];
  for (const { runner, expires } of loaded) {
    const row = await baseRow(catalog, runner, expires, runner.sizeVramBytes);
    if (!row) continue;
    models.push({
      ...row,
      ...(runner.pid !== undefined ? { pid: runner.pid } : {}),
      ...(runner.devices
        ? {
            devices: runner.devices.map((d) => ({
              name: d.name,
              size: d.bytes,
              ...(d.endpoint ? { endpoint: d.endpoint } : {}),
            })),
          }
        : {}),
      ...(runner.usage
        ? {
            parallel: {
              slots: runner.spec.numParallel,
              slots_busy: runner.usage.slotsBusy,
              slots_waiting: runner.usage.slotsWaiting ?? 0,
              queued: runner.usage.queuedTasks,
              kv_shared: runner.spec.kvUnified ?? false,
              kv_cells: runner.usage.kvCellsTotal,
              kv_cells_used: runner.usage.kvCellsUsed,
              ...(runner.usage.threads !== undefined ? { threads: runner.usage.threads } : {}),
              ...(runner.usage.ramCache
                ? { ram_cache: { ...runner.usage.ramCache, max_bytes: runner.spec.cacheRamBytes ?? 0 } }
                : {}),
            },
          }
        : {}),
    });
  }
  for (const loading of scheduler.loading()) {
    const row = await baseRow(catalog, loading, expiresAt(loading, now), 0);
    if (row) models.push({ ...row, loading: true, load_progress: loading.progress });
  }
  return { models };
}

/**
 * Ollama's fields of one /api/ps row (§3.7) for a runner, loaded or loading, named by the manifest that references its
 * weights (else by blob path); null when the caller may not see it: a caller limited to a model list sees only the
 * runners of its list (docs/security.md "Tenants").
 * @param sizeVram bytes in accelerator memory (0 while loading).
 */
async function baseRow(
  catalog: ModelsService,
  runner: { spec: { modelPath: string; numCtx: number }; sizeBytes: number },
  expires: Date,
  sizeVram: number,
): Promise<ProcessModelWire | null> {
  const model = await catalog.findByWeights(runner.spec.modelPath).catch(() => null);
  if (!model && !seesEveryModel()) return null;
  const name = model?.name ?? runner.spec.modelPath;
  return {
    name,
    model: name,
    size: runner.sizeBytes,
    digest: model?.digest ?? '',
    details: model?.details ?? NO_DETAILS,
    expires_at: expires.toISOString(),
    size_vram: sizeVram,
    context_length: runner.spec.numCtx,
  };
}
