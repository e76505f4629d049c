import { Controller, Get, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { LlamadRoutes, Public } from '../../security';
import { ReadinessService } from './readiness.service';

/** GET /health's body. */
export interface HealthStatusWire {
  status: 'ok';
}

/** GET /ready's body: `ok`, or `unavailable` (503) with the reason. */
export interface ReadyStatusWire {
  status: 'ok' | 'unavailable';
  error?: string;
}

/**
 * Probes for orchestrators (beyond Ollama): GET /health (alive: the process answers) and GET /ready (can serve: not
 * shutting down, the model store is readable and the native addon loads). Public — no API key, like `/` and `/api/version` — but behind
 * the Origin/Host gate like every route. HEAD works for both (Fastify answers HEAD for every GET route).
 */
@Public()
@LlamadRoutes()
@Controller()
export class HealthController {
  constructor(private readonly readiness: ReadinessService) {}

  /** `200 {"status":"ok"}` while the process serves HTTP. */
  @Get('health')
  @ApiRoute({
    id: 'getHealth',
    summary: 'Liveness probe',
    tag: ApiTag.Operations,
    public: true,
    ok: { description: 'The daemon is alive.', json: 'HealthStatus' },
  })
  health(): HealthStatusWire {
    return { status: 'ok' };
  }

  /** `200 {"status":"ok"}` when the daemon can serve; `503 {"status":"unavailable","error":"…"}` otherwise. */
  @Get('ready')
  @ApiRoute({
    id: 'getReady',
    summary: 'Readiness probe',
    description:
      'Checks that the daemon is not shutting down (503 `shutting down` from SIGTERM on, during LLAMAD_DRAIN_DELAY), ' +
      'that the model store directory is readable and that the native addon loads.',
    tag: ApiTag.Operations,
    public: true,
    ok: { description: 'The daemon can serve requests.', json: 'ReadyStatus' },
    statuses: { 503: 'The daemon cannot serve requests: `{"status":"unavailable","error":"…"}`.' },
  })
  async ready(@Res({ passthrough: true }) reply: FastifyReply): Promise<ReadyStatusWire> {
    const result = await this.readiness.check();
    if (result.ready) return { status: 'ok' };
    void reply.code(503);
    return { status: 'unavailable', error: result.reason };
  }
}
