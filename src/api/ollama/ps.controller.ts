import { Controller, Get } from '@nestjs/common';
import { LlamadRoutes } from '../../common/http';
import { ModelDetails, ModelsService } from '../../models';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { LoadedRunnerInfo, SchedulerService } from '../../scheduler';

/** One entry of GET /api/ps (Ollama `api.ProcessModelResponse`, reference/ollama-api.md §3.7). */
export interface ProcessModelWire {
  name: string;
  model: string;
  /** Estimated resident bytes (weights file + KV cache + compute buffers), as the scheduler accounts it. */
  size: number;
  /** Hex sha256 of the manifest bytes. */
  digest: string;
  details: ModelDetails;
  /** ISO 8601 UTC (`…Z`) when the runner leaves memory; far future for keep-alive forever. */
  expires_at: string;
  /** Bytes in accelerator memory: always 0 (CPU build). */
  size_vram: number;
  /** Effective per-request context (num_ctx after clamping to the training context), tokens. */
  context_length: number;
}

/** GET /api/ps. */
export interface ProcessResponseWire {
  models: ProcessModelWire[];
}

/** Go's time.Now().Add(math.MaxInt64): about 292 years ahead — what Ollama shows for keep-alive forever. */
const FOREVER_MS = Number(2n ** 63n - 1n) / 1e6;

/**
 * When a loaded runner leaves memory, as Ollama reports it (§3.7): the idle timer's time; while in use (or marked to
 * unload) now + keep-alive (0 → now); forever → ~292 years ahead.
 * @param now epoch ms.
 */
export function expiresAt(runner: LoadedRunnerInfo, now: number): Date {
  if (runner.expiresAt) return runner.expiresAt;
  if (runner.keepAliveMs === Infinity) return new Date(now + FOREVER_MS);
  return new Date(now + Math.max(0, runner.keepAliveMs));
}

/**
 * GET /api/ps — the loaded models (§3.7), longest remaining time first; `{"models": []}` when none. (A delete unloads
 * the runner of the deleted weights through ModelLifecycleService.deleted$, which the scheduler follows.)
 */
@LlamadRoutes()
@Controller('api')
export class PsController {
  constructor(
    private readonly scheduler: SchedulerService,
    private readonly models: ModelsService,
  ) {}

  /** The loaded models; runners whose weights no manifest names any more are listed by blob path. */
  @Get('ps')
  @ApiRoute({
    id: 'listRunningModels',
    summary: 'List loaded models',
    tag: ApiTag.Ollama,
    ok: { description: 'The models in memory, longest remaining time first.', json: 'ProcessResponse' },
  })
  async ps(): Promise<ProcessResponseWire> {
    const now = Date.now();
    const loaded = this.scheduler.loaded().map((r) => ({ runner: r, expires: expiresAt(r, now) }));
    loaded.sort((a, b) => b.expires.getTime() - a.expires.getTime());
    const models: ProcessModelWire[] = [];
    for (const { runner, expires } of loaded) {
      const model = await this.models.findByWeights(runner.spec.modelPath).catch(() => null);
      const name = model?.name ?? runner.spec.modelPath;
      models.push({
        name,
        model: name,
        size: runner.sizeBytes,
        digest: model?.digest ?? '',
        details: model?.details ?? {
          parent_model: '',
          format: 'gguf',
          family: '',
          families: null,
          parameter_size: '',
          quantization_level: '',
        },
        expires_at: expires.toISOString(),
        size_vram: 0,
        context_length: runner.spec.numCtx,
      });
    }
    return { models };
  }
}
