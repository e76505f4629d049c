import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { clientGoneSignal } from '../../common/http';
import { LlamadRoutes } from '../../security';
import { LlamadService } from './llamad.service';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { RerankRequestDto, RerankResponseWire } from './dto/rerank-request.dto';

/** OpenAPI text shared by /api/rerank and /v1/rerank. */
export const RERANK_DOC = {
  summary: 'Rerank documents against a query (beyond Ollama)',
  description:
    'The Jina/Cohere shape llama-server serves: a reranking model (GGUF pooling_type rank) scores each document; ' +
    'results best first, cut to `top_n`. A model that is not a reranker → 400 (`{"error"}` under /api, OpenAI\'s ' +
    'error object under /v1).',
  tag: ApiTag.Ollama,
  ok: { description: 'Scores, best first.', json: 'RerankResponse' },
} as const;

/**
 * POST /api/rerank (beyond Ollama; /v1/rerank is OpenAIRerankController, same body, OpenAI's error shape). Thin: the
 * facade; a client that leaves cancels the scoring.
 */
@LlamadRoutes()
@Controller()
export class RerankController {
  constructor(private readonly llamad: LlamadService) {}

  @Post('api/rerank')
  @HttpCode(200)
  @ApiRoute({ id: 'rerank', ...RERANK_DOC })
  rerank(@Body() body: RerankRequestDto, @Res({ passthrough: true }) reply: FastifyReply): Promise<RerankResponseWire> {
    return this.llamad.rerank(body, { signal: clientGoneSignal(reply) });
  }
}
