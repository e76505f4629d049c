import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { map } from 'rxjs';
import { ollamaErrorLine, StreamResponder } from '../common/http';
import { ChatService } from './chat.service';
import { ChatRequestDto } from './dto/chat-request.dto';
import { fromChatRequest, toChatChunk, toChatResponse } from './ollama.mapper';

/** POST /api/chat (reference/ollama-api.md §3.3). Thin: decode, call the service, choose the wire format. */
@Controller('api')
export class ChatController {
  constructor(
    private readonly chatService: ChatService,
    private readonly responder: StreamResponder,
  ) {}

  /** Streams NDJSON chunks by default; one JSON object with `stream: false` and for the load/unload shortcuts. */
  @Post('chat')
  @HttpCode(200)
  async chat(@Body() body: ChatRequestDto, @Res() reply: FastifyReply): Promise<void> {
    const cmd = fromChatRequest(body, process.hrtime.bigint());
    const events$ = this.chatService.chat(cmd);
    if (body.stream === false || ChatService.isShortcut(cmd)) {
      await this.responder.json(reply, events$.pipe(toChatResponse(cmd.model)));
      return;
    }
    await this.responder.ndjson(reply, events$.pipe(map((e) => toChatChunk(cmd.model, e))), ollamaErrorLine);
  }
}
