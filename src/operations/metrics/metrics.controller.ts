import { Controller, Get, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { AdminOnly, LlamadRoutes } from '../../security';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { MetricsService } from './metrics.service';

/**
 * GET /metrics: the Prometheus text exposition (docs/observability.md). Behind the API-key guard like every
 * non-public route (and the Origin/Host gate): scrapers send the key as `Authorization: Bearer`. Admin-only: its
 * labels name every model and tenant, which a `user` key must not learn (docs/security.md "Tenants").
 */
@LlamadRoutes()
@Controller()
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  /** Every metric in Prometheus text format 0.0.4. */
  @Get('metrics')
  @AdminOnly()
  @ApiRoute({
    id: 'getMetrics',
    summary: 'Prometheus metrics',
    description:
      'Request, token, latency and scheduler metrics plus the process collectors, in Prometheus text format ' +
      '(docs/observability.md).',
    tag: ApiTag.Operations,
    ok: { description: 'The metrics.', text: '# HELP llamad_http_requests_total …' },
    adminOnly: true,
  })
  async scrape(@Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    const text = await this.metrics.render();
    void reply.header('content-type', this.metrics.contentType);
    return text;
  }
}
