import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { LlamadRoutes } from '../../common/http';
import { LlamadService } from '../../facade/llamad.service';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import {
  EmbeddingsRequestDto,
  EmbeddingsResponseWire,
  EmbedRequestDto,
  EmbedResponseWire,
} from './dto/embed-request.dto';

/** POST /api/embed and the legacy POST /api/embeddings (reference/ollama-api.md §3.4, §3.5). Thin: the facade. */
@LlamadRoutes()
@Controller('api')
export class EmbedController {
  constructor(private readonly llamad: LlamadService) {}

  /** `{model, embeddings, total_duration, load_duration, prompt_eval_count}`; zero metrics omitted. */
  @Post('embed')
  @HttpCode(200)
  @ApiRoute({
    id: 'embed',
    summary: 'Embed text',
    tag: ApiTag.Ollama,
    ok: { description: 'One vector per input.', json: 'EmbedResponse' },
  })
  embed(@Body() body: EmbedRequestDto): Promise<EmbedResponseWire> {
    return this.llamad.embed(body);
  }

  /** `{embedding}` for one `prompt`; an empty prompt loads the model and answers `{"embedding":[]}`. */
  @Post('embeddings')
  @HttpCode(200)
  @ApiRoute({
    id: 'embeddings',
    summary: 'Embed one prompt (legacy)',
    tag: ApiTag.Ollama,
    ok: { description: 'The vector.', json: 'EmbeddingsResponse' },
  })
  embeddings(@Body() body: EmbeddingsRequestDto): Promise<EmbeddingsResponseWire> {
    return this.llamad.embeddings(body);
  }
}
