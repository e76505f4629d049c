import { Body, Controller, Delete, Get, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { StreamResponder } from '../../../common/http';
import { LlamadRoutes, Metered, principalOf } from '../../../security';
import { ApiRoute, ApiTag } from '../../../openapi/api-route.decorator';
import { OpenAIExceptionFilter } from '..';
import { writeResponsesSse } from './responses-sse';
import { ResponsesService } from './responses.service';
import { ResponseDeleted, ResponseObject } from './responses.types';

/**
 * The OpenAI Responses API (reference/ollama-api.md §12.6; clients.md §1.2): POST /v1/responses, and — beyond
 * Ollama, which is stateless — GET and DELETE /v1/responses/{id} over the RESPONSES_STORE (in memory or Redis). Thin: ResponsesService
 * decodes, runs and stores; every error is rendered by OpenAIExceptionFilter as `{"error":{message,type,param,code}}`
 * (400 invalid_request_error, 404 not_found_error — the SDK's BadRequestError / NotFoundError).
 */
@Controller('v1/responses')
@LlamadRoutes(OpenAIExceptionFilter)
export class ResponsesController {
  constructor(
    private readonly service: ResponsesService,
    private readonly responder: StreamResponder,
  ) {}

  /**
   * A Response object (default) or, with `stream: true`, SSE events from `response.created` to `response.completed`
   * (or `response.incomplete`); an error after the first event is an `event: error` frame, then the stream ends.
   * 400 for invalid requests or capabilities, 404 for an unknown model or previous_response_id.
   */
  @Post()
  @HttpCode(200)
  @Metered('openai')
  @ApiRoute({
    id: 'createResponse',
    rateLimited: true,
    summary: 'Create a model response (Responses API)',
    tag: ApiTag.OpenAI,
    body: 'ResponsesRequest',
    ok: {
      description: 'A Response object, or with `stream: true` events from `response.created` to `response.completed`.',
      json: 'ResponseObject',
      sse: 'ResponseStreamEvent',
    },
  })
  async create(@Body() body: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const prepared = await this.service.prepare(body, process.hrtime.bigint(), principalOf(request).id);
    if (!prepared.stream) {
      await this.responder.json(reply, this.service.respond(prepared));
      return;
    }
    const run = this.service.stream(prepared);
    await writeResponsesSse(reply, run.events$, run.errorEvent);
  }

  /** A stored response (404 when unknown, expired, deleted, or created with `store: false`). */
  @Get(':id')
  @ApiRoute({
    id: 'getResponse',
    summary: 'Retrieve a stored response',
    tag: ApiTag.OpenAI,
    params: { id: '`resp_…`.' },
    ok: { description: 'The response.', json: 'ResponseObject' },
  })
  retrieve(@Param('id') id: string, @Req() request: FastifyRequest): Promise<ResponseObject> {
    return this.service.retrieve(principalOf(request).id, id);
  }

  /** Deletes a stored response: `{id, object: "response", deleted: true}`; 404 when there is none. */
  @Delete(':id')
  @HttpCode(200)
  @ApiRoute({
    id: 'deleteResponse',
    summary: 'Delete a stored response',
    tag: ApiTag.OpenAI,
    params: { id: '`resp_…`.' },
    ok: { description: 'Deleted.', json: 'ResponseDeleted' },
  })
  remove(@Param('id') id: string, @Req() request: FastifyRequest): Promise<ResponseDeleted> {
    return this.service.delete(principalOf(request).id, id);
  }
}
