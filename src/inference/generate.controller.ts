import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { map } from 'rxjs';
import { ollamaErrorLine, StreamResponder } from '../common/http';
import { GenerateRequestDto } from './dto/generate-request.dto';
import { GenerateService } from './generate.service';
import { fromGenerateRequest, toGenerateChunk, toGenerateResponse } from './ollama.mapper';

/** POST /api/generate (reference/ollama-api.md §3.2). Thin: decode, call the service, choose the wire format. */
@Controller('api')
export class GenerateController {
  constructor(
    private readonly generateService: GenerateService,
    private readonly responder: StreamResponder,
  ) {}

  /**
   * Streams NDJSON chunks by default; one JSON object with `stream: false` and for the load/unload shortcuts
   * (empty prompt), as Ollama answers those with c.JSON.
   */
  @Post('generate')
  @HttpCode(200)
  async generate(@Body() body: GenerateRequestDto, @Res() reply: FastifyReply): Promise<void> {
    const cmd = fromGenerateRequest(body, process.hrtime.bigint());
    const events$ = this.generateService.generate(cmd);
    if (body.stream === false || GenerateService.isShortcut(cmd)) {
      await this.responder.json(reply, events$.pipe(toGenerateResponse(cmd.model)));
      return;
    }
    await this.responder.ndjson(reply, events$.pipe(map((e) => toGenerateChunk(cmd.model, e))), ollamaErrorLine);
  }
}
