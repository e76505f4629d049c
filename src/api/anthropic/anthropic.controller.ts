import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { map } from 'rxjs';
import { StreamResponder } from '../../common/http';
import { LlamadRoutes, Metered } from '../../security';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { AnthropicExceptionFilter, toAnthropicError } from './anthropic-error';
import { AnthropicMessagesService } from './anthropic-messages.service';
import { fromMessagesRequest } from './anthropic-request.mapper';
import { streamSse } from './anthropic-sse.responder';

/**
 * Anthropic Messages API (reference/ollama-api.md §12.8, clients.md §1.3): POST /v1/messages and
 * /v1/messages/count_tokens. `x-api-key` / `Authorization: Bearer` (any value) and any `anthropic-version` /
 * `anthropic-beta` are accepted and ignored. Errors render in Anthropic's shape through AnthropicExceptionFilter.
 */
@Controller('v1/messages')
@LlamadRoutes(AnthropicExceptionFilter)
export class AnthropicController {
  constructor(
    private readonly service: AnthropicMessagesService,
    private readonly responder: StreamResponder,
  ) {}

  /**
   * One message: JSON (`stream` false/absent) or SSE (`stream: true`; a mid-stream error is an `event: error` frame).
   * 400 invalid_request_error, 404 not_found_error, 503 overloaded_error, else api_error.
   */
  @Post()
  @HttpCode(200)
  @Metered('anthropic')
  @ApiRoute({
    id: 'createMessage',
    rateLimited: true,
    summary: 'Create a message',
    tag: ApiTag.Anthropic,
    body: 'AnthropicMessagesRequest',
    ok: {
      description: 'A message, or with `stream: true` its events.',
      json: 'AnthropicMessage',
      sse: 'AnthropicStreamEvent',
    },
  })
  async create(@Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    const cmd = fromMessagesRequest(body, process.hrtime.bigint());
    if ((body as { stream?: unknown }).stream === true) {
      await streamSse(reply, this.service.stream(cmd), (err) => {
        const { body: error } = toAnthropicError(err);
        return { event: 'error', data: { ...error } };
      });
      return;
    }
    await this.responder.json(reply, this.service.message(cmd));
  }

  /**
   * `{input_tokens}` (tokens): the request rendered with the model's template and tokenized by the same step as
   * POST /v1/messages, so it equals that request's `input_tokens + cache_read_input_tokens` (max_tokens not needed).
   */
  @Post('count_tokens')
  @HttpCode(200)
  @ApiRoute({
    id: 'countMessageTokens',
    summary: 'Count the tokens of a message request',
    tag: ApiTag.Anthropic,
    body: 'AnthropicCountTokensRequest',
    ok: { description: 'The prompt size in tokens.', json: 'AnthropicCountTokensResponse' },
  })
  async countTokens(@Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    const cmd = fromMessagesRequest(body, process.hrtime.bigint(), false);
    // The responder unsubscribes when the client leaves: the wait for the model and the lease end there.
    await this.responder.json(reply, this.service.countTokens(cmd).pipe(map((n) => ({ input_tokens: n }))));
  }
}
