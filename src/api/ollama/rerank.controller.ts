import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { clientGoneSignal, LlamadRoutes } from '../../common/http';
import { LlamadService } from '../../facade/llamad.service';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { RerankRequestDto, RerankResponseWire } from './dto/rerank-request.dto';

const DOC = {
  summary: 'Rerank documents against a query (beyond Ollama)',
  description:
    'The Jina/Cohere shape llama-server serves: a reranking model (GGUF pooling_type rank) scores each document; ' +
    'results best first, cut to `top_n`. A model that is not a reranker → 400. Errors are `{"error"}` on both paths.',
  tag: ApiTag.Ollama,
  ok: { description: 'Scores, best first.', json: 'RerankResponse' },
} as const;

/** POST /api/rerank and /v1/rerank (beyond Ollama). Thin: the facade; a client that leaves cancels the scoring. */
@LlamadRoutes()
@Controller()
export class RerankController {
  constructor(private readonly llamad: LlamadService) {}

  @Post('api/rerank')
  @HttpCode(200)
  @ApiRoute({ id: 'rerank', ...DOC })
  rerank(@Body() body: RerankRequestDto, @Res({ passthrough: true }) reply: FastifyReply): Promise<RerankResponseWire> {
    return this.llamad.rerank(body, { signal: clientGoneSignal(reply) });
  }

  @Post('v1/rerank')
  @HttpCode(200)
  @ApiRoute({ id: 'rerankV1', ...DOC })
  rerankV1(
    @Body() body: RerankRequestDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<RerankResponseWire> {
    return this.llamad.rerank(body, { signal: clientGoneSignal(reply) });
  }
}
