import { Controller, Get, Header } from '@nestjs/common';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { OLLAMA_API_VERSION } from '../../config';
import { LlamadRoutes, Public } from '../../security';

/**
 * Health and version routes (reference/ollama-api.md §3.1). HEAD is answered by Fastify for every GET route. Public:
 * no API key is needed (clients probe them before anything else).
 */
@Public()
@LlamadRoutes()
@Controller()
export class AppController {
  /** `200 Ollama is running` (text/plain), the conventional health check. */
  @Get()
  @Header('content-type', 'text/plain; charset=utf-8')
  @ApiRoute({
    id: 'getRoot',
    summary: 'Health check',
    tag: ApiTag.Operations,
    public: true,
    ok: { description: 'The daemon is up.', text: 'Ollama is running' },
  })
  root(): string {
    return 'Ollama is running';
  }

  /** `{"version": "<x.y.z>"}`. */
  @Get('api/version')
  @ApiRoute({
    id: 'getVersion',
    summary: 'Ollama API version',
    tag: ApiTag.Operations,
    public: true,
    ok: { description: 'The API level implemented.', json: 'VersionResponse' },
  })
  version(): { version: string } {
    return { version: OLLAMA_API_VERSION };
  }
}
