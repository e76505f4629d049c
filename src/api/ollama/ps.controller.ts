import { Controller, Get } from '@nestjs/common';
import { LlamadRoutes } from '../../security';
import { LlamadService } from './llamad.service';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { ProcessResponseWire } from './dto/ps-response.dto';

/**
 * GET /api/ps — the loaded models (§3.7), longest remaining time first; `{"models": []}` when none. (A delete unloads
 * the runner of the deleted weights through ModelLifecycleService.deleted$, which the scheduler follows.)
 */
@LlamadRoutes()
@Controller('api')
export class PsController {
  constructor(private readonly llm: LlamadService) {}

  /** The loaded models; runners whose weights no manifest names any more are listed by blob path. */
  @Get('ps')
  @ApiRoute({
    id: 'listRunningModels',
    summary: 'List loaded models',
    tag: ApiTag.Ollama,
    ok: { description: 'The models in memory, longest remaining time first.', json: 'ProcessResponse' },
  })
  ps(): Promise<ProcessResponseWire> {
    return this.llm.ps();
  }
}
