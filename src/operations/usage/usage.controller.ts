import { Controller, Get, Req } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { LlamadRoutes } from '../../security';
import { AdminOnly } from '../../security/admin-only';
import { UsageResponseWire, UsageService } from './usage.service';

/**
 * GET /api/usage (issue 33 item 5; beyond Ollama): usage per principal name and model over a time range since
 * start-up, for `admin` principals (a principal without a policy is one). Part of the native surface, under the
 * module's prefix like every llamad route; per replica (docs/security.md "Usage").
 */
@LlamadRoutes()
@Controller('api')
export class UsageController {
  constructor(private readonly usage: UsageService) {}

  /**
   * The usage report for `?start=&end=` (RFC 3339 or unix seconds; default start-up → now).
   * A principal whose policy role is `user` gets 403 from the authorization hook (`@AdminOnly()`), before this runs.
   * @throws InvalidRequestError (400) for a bad `start`/`end` or a start after the end.
   */
  @Get('usage')
  @AdminOnly()
  @ApiRoute({
    id: 'getUsage',
    summary: 'Usage per caller and model (beyond Ollama)',
    description:
      'Requests, prompt/cached/completion tokens and refusals by reason, per principal name and model, for ' +
      'requests that ended in [start, end) — at one-minute resolution for the last 24 hours, one hour before; kept ' +
      '31 days; since this replica started (each replica reports its own, like /metrics). Admin principals only.',
    tag: ApiTag.Ollama,
    ok: { description: 'The usage.', json: 'UsageResponse' },
    statuses: { 400: 'A bad start or end.' },
    adminOnly: true,
  })
  @ApiQuery({
    name: 'start',
    required: false,
    description: 'Start of the range: RFC 3339 (2026-01-02T15:04:05Z) or unix seconds. Default: start-up.',
    schema: { type: 'string' },
  })
  @ApiQuery({
    name: 'end',
    required: false,
    description: 'End of the range: RFC 3339 or unix seconds. Default: now.',
    schema: { type: 'string' },
  })
  async report(@Req() request: FastifyRequest): Promise<UsageResponseWire> {
    const query = (request.query ?? {}) as { start?: unknown; end?: unknown };
    return this.usage.report({ start: query.start, end: query.end });
  }
}
