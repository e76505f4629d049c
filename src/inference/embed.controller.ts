import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { InvalidRequestError } from '../common/errors';
import { decodeOptions } from '../common/options';
import { parseKeepAlive } from '../common/time';
import {
  EmbeddingsRequestDto,
  EmbeddingsResponseWire,
  EmbedRequestDto,
  EmbedResponseWire,
} from './dto/embed-request.dto';
import { EmbedService } from './embed.service';

/** POST /api/embed and the legacy POST /api/embeddings (reference/ollama-api.md §3.4, §3.5). Thin. */
@Controller('api')
export class EmbedController {
  constructor(private readonly embedService: EmbedService) {}

  /** `{model, embeddings, total_duration, load_duration, prompt_eval_count}`; zero metrics omitted. */
  @Post('embed')
  @HttpCode(200)
  async embed(@Body() body: EmbedRequestDto): Promise<EmbedResponseWire> {
    const startedAt = process.hrtime.bigint();
    const model = body.model ?? '';
    const result = await this.embedService.embed({
      model,
      input: body.input,
      truncate: body.truncate ?? true,
      dimensions: body.dimensions ?? undefined,
      options: decodeOptions(body.options),
      keepAliveMs: parseKeepAlive(body.keep_alive),
      startedAt,
    });
    const out: EmbedResponseWire = { model, embeddings: result.embeddings };
    if (result.totalDurationNs > 0) out.total_duration = Math.round(result.totalDurationNs);
    if (result.loadDurationNs > 0) out.load_duration = Math.round(result.loadDurationNs);
    if (result.promptEvalCount > 0) out.prompt_eval_count = result.promptEvalCount;
    return out;
  }

  /** `{embedding}` for one `prompt`; an empty prompt loads the model and answers `{"embedding":[]}`. */
  @Post('embeddings')
  @HttpCode(200)
  async embeddings(@Body() body: EmbeddingsRequestDto): Promise<EmbeddingsResponseWire> {
    if (!body.model) throw new InvalidRequestError('model is required', 'model');
    const result = await this.embedService.embed({
      model: body.model,
      input: body.prompt ?? '',
      truncate: true,
      options: decodeOptions(body.options),
      keepAliveMs: parseKeepAlive(body.keep_alive),
      startedAt: process.hrtime.bigint(),
    });
    return { embedding: result.embeddings[0] ?? [] };
  }
}
