import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ollamaErrorLine, StreamResponder } from '../../common/http';
import { AdminOnly, LlamadRoutes } from '../../security';
import { LlamadService, RegistryResult } from './llamad.service';
import type { LlamadStream } from './llamad-stream';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { RegistryRequestDto } from './dto/registry-request.dto';
import { RegistryProgressWire } from '../../registry/registry.types';

/**
 * Registry routes (reference/ollama-api.md §3.13, §3.14): POST /api/pull and POST /api/push. Validation errors are
 * plain 4xx responses; then NDJSON progress records (`done` false until `success`), errors after the first record
 * as one `{"error": "…"}` line; with `stream: false` only `{"status":"success"}` (or the error with a status).
 * Thin: the facade does the work.
 */
@LlamadRoutes()
@Controller('api')
export class RegistryController {
  constructor(
    private readonly llamad: LlamadService,
    private readonly responder: StreamResponder,
  ) {}

  /** Downloads a model. 400 `invalid model name`; stream errors e.g. `pull model manifest: file does not exist`. */
  @Post('pull')
  @AdminOnly()
  @HttpCode(200)
  @ApiRoute({
    id: 'pullModel',
    adminOnly: true,
    summary: 'Download a model from a registry',
    tag: ApiTag.Ollama,
    ok: { description: 'Progress records, the last `success`.', ndjson: 'ProgressResponse', json: 'StatusResponse' },
  })
  async pull(@Body() body: RegistryRequestDto, @Res() reply: FastifyReply): Promise<void> {
    await this.respond(reply, this.llamad.pull(body));
  }

  /** Uploads a local model. 400 `model is required`, 404 `model '<name>' not found`. */
  @Post('push')
  @AdminOnly()
  @HttpCode(200)
  @ApiRoute({
    id: 'pushModel',
    adminOnly: true,
    summary: 'Upload a model to a registry',
    tag: ApiTag.Ollama,
    ok: { description: 'Progress records, the last `success`.', ndjson: 'ProgressResponse', json: 'StatusResponse' },
  })
  async push(@Body() body: RegistryRequestDto, @Res() reply: FastifyReply): Promise<void> {
    await this.respond(reply, this.llamad.push(body));
  }

  private async respond(reply: FastifyReply, progress: LlamadStream<RegistryProgressWire, RegistryResult>) {
    if (!progress.stream) {
      await this.responder.json(reply, progress.response$);
      return;
    }
    await this.responder.ndjson(reply, progress.observable, ollamaErrorLine);
  }
}
