import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ollamaErrorLine, StreamResponder } from '../../common/http';
import { LlamadRoutes, Metered } from '../../security';
import { LlamadService } from './llamad.service';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { GenerateRequestDto } from './dto/generate-request.dto';

/** POST /api/generate (reference/ollama-api.md §3.2). Thin: call the facade, choose the wire format. */
@LlamadRoutes()
@Controller('api')
export class GenerateController {
  constructor(
    private readonly llamad: LlamadService,
    private readonly responder: StreamResponder,
  ) {}

  /**
   * Streams NDJSON chunks by default; one JSON object with `stream: false` and for the load/unload shortcuts
   * (empty prompt), as Ollama answers those with c.JSON.
   */
  @Post('generate')
  @HttpCode(200)
  @Metered('ollama')
  @ApiRoute({
    id: 'generate',
    rateLimited: true,
    summary: 'Generate a completion',
    description:
      'Streams NDJSON chunks by default; one JSON object with `stream: false`. Empty prompt: loads the model.',
    tag: ApiTag.Ollama,
    ok: { description: 'Chunks (stream) or the whole answer.', ndjson: 'GenerateResponse', json: 'GenerateResponse' },
  })
  async generate(@Body() body: GenerateRequestDto, @Res() reply: FastifyReply): Promise<void> {
    const answer = this.llamad.generate(body);
    if (!answer.stream) {
      await this.responder.json(reply, answer.response$);
      return;
    }
    await this.responder.ndjson(reply, answer.observable, ollamaErrorLine);
  }
}
