import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { clientGoneSignal } from '../../common/http';
import { LlamadRoutes } from '../../security';
import { LlamadService } from '../ollama/llamad.service';
import { ApiRoute } from '../../openapi/api-route.decorator';
import { RerankRequestDto, RerankResponseWire } from '../ollama/dto/rerank-request.dto';
import { RERANK_DOC } from '../ollama/rerank.controller';
import { OpenAIExceptionFilter } from './openai-error';

/**
 * POST /v1/rerank (beyond Ollama): the Jina/Cohere shape llama-server serves, the same service as /api/rerank, with
 * errors rendered as OpenAI's `{"error": {message, type, code}}` like every other /v1 route.
 */
@Controller('v1')
@LlamadRoutes(OpenAIExceptionFilter)
export class OpenAIRerankController {
  constructor(private readonly llamad: LlamadService) {}

  @Post('rerank')
  @HttpCode(200)
  @ApiRoute({ id: 'rerankV1', ...RERANK_DOC })
  rerank(@Body() body: RerankRequestDto, @Res({ passthrough: true }) reply: FastifyReply): Promise<RerankResponseWire> {
    return this.llamad.rerank(body, { signal: clientGoneSignal(reply) });
  }
}
