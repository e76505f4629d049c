import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ollamaErrorLine, StreamResponder } from '../../common/http';
import { LlamadRoutes, Metered } from '../../security';
import { LlamadService } from './llamad.service';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { ChatRequestDto } from './dto/chat-request.dto';

/** POST /api/chat (reference/ollama-api.md §3.3). Thin: call the facade, choose the wire format. */
@LlamadRoutes()
@Controller('api')
export class ChatController {
  constructor(
    private readonly llamad: LlamadService,
    private readonly responder: StreamResponder,
  ) {}

  /** Streams NDJSON chunks by default; one JSON object with `stream: false` and for the load/unload shortcuts. */
  @Post('chat')
  @HttpCode(200)
  @Metered('ollama')
  @ApiRoute({
    id: 'chat',
    rateLimited: true,
    summary: 'Chat with a model',
    description:
      'Streams NDJSON chunks by default; one JSON object with `stream: false`. No messages: loads the model.',
    tag: ApiTag.Ollama,
    ok: { description: 'Chat chunks (stream) or the whole answer.', ndjson: 'ChatResponse', json: 'ChatResponse' },
  })
  async chat(@Body() body: ChatRequestDto, @Res() reply: FastifyReply): Promise<void> {
    const answer = this.llamad.chat(body);
    if (!answer.stream) {
      await this.responder.json(reply, answer.response$);
      return;
    }
    await this.responder.ndjson(reply, answer.observable, ollamaErrorLine);
  }
}
