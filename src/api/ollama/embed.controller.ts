import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { clientGoneSignal } from '../../common/http';
import { LlamadRoutes, Metered } from '../../security';
import { LlamadService } from './llamad.service';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import {
  EmbeddingsRequestDto,
  EmbeddingsResponseWire,
  EmbedRequestDto,
  EmbedResponseWire,
} from './dto/embed-request.dto';

/**
 * POST /api/embed and the legacy POST /api/embeddings (reference/ollama-api.md §3.4, §3.5). Thin: the facade. A
 * client that leaves cancels the embedding (clientGoneSignal), which frees the engine for the next request.
 */
@LlamadRoutes()
@Controller('api')
export class EmbedController {
  constructor(private readonly llamad: LlamadService) {}

  /** `{model, embeddings, total_duration, load_duration, prompt_eval_count}`; zero metrics omitted. */
  @Post('embed')
  @HttpCode(200)
  @Metered('ollama')
  @ApiRoute({
    id: 'embed',
    rateLimited: true,
    summary: 'Embed text',
    tag: ApiTag.Ollama,
    ok: { description: 'One vector per input.', json: 'EmbedResponse' },
  })
  embed(@Body() body: EmbedRequestDto, @Res({ passthrough: true }) reply: FastifyReply): Promise<EmbedResponseWire> {
    return this.llamad.embed(body, { signal: clientGoneSignal(reply) });
  }

  /** `{embedding}` for one `prompt`; an empty prompt loads the model and answers `{"embedding":[]}`. */
  @Post('embeddings')
  @HttpCode(200)
  @Metered('ollama')
  @ApiRoute({
    id: 'embeddings',
    rateLimited: true,
    summary: 'Embed one prompt (legacy)',
    tag: ApiTag.Ollama,
    ok: { description: 'The vector.', json: 'EmbeddingsResponse' },
  })
  embeddings(
    @Body() body: EmbeddingsRequestDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<EmbeddingsResponseWire> {
    return this.llamad.embeddings(body, { signal: clientGoneSignal(reply) });
  }
}
