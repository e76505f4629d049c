import { Controller, Get, Header } from '@nestjs/common';
import { Public } from './security';

/**
 * The Ollama API level this daemon implements, reported by /api/version. Clients compare it to decide which request
 * fields to send (reference/ollama-api.md §3.1, Appendix B); unknown fields are ignored anyway.
 */
export const OLLAMA_API_VERSION = '0.33.0';

/**
 * Health and version routes (reference/ollama-api.md §3.1). HEAD is answered by Fastify for every GET route. Public:
 * no API key is needed (clients probe them before anything else).
 */
@Public()
@Controller()
export class AppController {
  /** `200 Ollama is running` (text/plain), the conventional health check. */
  @Get()
  @Header('content-type', 'text/plain; charset=utf-8')
  root(): string {
    return 'Ollama is running';
  }

  /** `{"version": "<x.y.z>"}`. */
  @Get('api/version')
  version(): { version: string } {
    return { version: OLLAMA_API_VERSION };
  }
}
