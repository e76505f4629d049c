import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { filter, map, Observable } from 'rxjs';
import { ollamaErrorLine, StreamResponder } from '../common/http';
import { RegistryRequestDto } from './dto/registry-request.dto';
import { RegistryService } from './registry.service';
import { RegistryProgress, toRegistryProgressWire } from './registry.types';

/**
 * Registry routes (reference/ollama-api.md §3.13, §3.14): POST /api/pull and POST /api/push. Validation errors are
 * plain 4xx responses; then NDJSON progress records (`done` false until `success`), errors after the first record
 * as one `{"error": "…"}` line; with `stream: false` only `{"status":"success"}` (or the error with a status).
 */
@Controller('api')
export class RegistryController {
  constructor(
    private readonly registry: RegistryService,
    private readonly responder: StreamResponder,
  ) {}

  /** Downloads a model. 400 `invalid model name`; stream errors e.g. `pull model manifest: file does not exist`. */
  @Post('pull')
  @HttpCode(200)
  async pull(@Body() body: RegistryRequestDto, @Res() reply: FastifyReply): Promise<void> {
    const plan = this.registry.preparePull(body.model || body.name || '', body.insecure ?? false);
    await this.respond(reply, this.registry.pull(plan), body.stream !== false);
  }

  /** Uploads a local model. 400 `model is required`, 404 `model '<name>' not found`. */
  @Post('push')
  @HttpCode(200)
  async push(@Body() body: RegistryRequestDto, @Res() reply: FastifyReply): Promise<void> {
    const plan = await this.registry.preparePush(body.model || body.name || '', body.insecure ?? false);
    await this.respond(reply, this.registry.push(plan), body.stream !== false);
  }

  private async respond(reply: FastifyReply, progress$: Observable<RegistryProgress>, stream: boolean) {
    if (!stream) {
      const final$ = progress$.pipe(
        filter((p) => p.status === 'success'),
        map(() => ({ status: 'success' })),
      );
      await this.responder.json(reply, final$);
      return;
    }
    await this.responder.ndjson(reply, progress$.pipe(map(toRegistryProgressWire)), ollamaErrorLine);
  }
}
