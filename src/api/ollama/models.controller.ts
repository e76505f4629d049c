import { Body, Controller, Delete, Get, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ollamaErrorLine, StreamResponder } from '../../common/http';
import { LlamadService } from './llamad.service';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { AdminOnly, isLoopbackAddress, LlamadRoutes } from '../../security';
import { CopyRequestDto, DeleteRequestDto } from './dto/copy-delete-request.dto';
import { CreateRequestDto } from './dto/create-request.dto';
import { ListResponseWire, ShowResponseWire } from './dto/model-responses.dto';
import { ShowRequestDto } from './dto/show-request.dto';
import { CreateRequester } from '../../models/model-create.types';
import { DaemonConfig } from '../../config';

/**
 * The model catalogue routes (reference/ollama-api.md §3): GET|HEAD /api/tags, POST /api/show, POST /api/create,
 * POST /api/copy, DELETE /api/delete. Thin: the facade does the work.
 */
@LlamadRoutes()
@Controller('api')
export class ModelsController {
  constructor(
    private readonly llamad: LlamadService,
    private readonly responder: StreamResponder,
    @Inject(DaemonConfig) private readonly config: DaemonConfig,
  ) {}

  /** Local models, newest first; `{"models": []}` when there are none (§3.6). */
  @Get('tags')
  @ApiRoute({
    id: 'listModels',
    summary: 'List local models',
    tag: ApiTag.Ollama,
    ok: { description: 'Local models, newest first.', json: 'ListResponse' },
  })
  tags(): Promise<ListResponseWire> {
    return this.llamad.list();
  }

  /** Model information (§3.8). 400 `model is required`, 404 `model '<name:tag>' not found`. */
  @Post('show')
  @HttpCode(200)
  @ApiRoute({
    id: 'showModel',
    summary: 'Show model information',
    tag: ApiTag.Ollama,
    ok: { description: 'Modelfile, parameters, template, details, model_info, capabilities.', json: 'ShowResponse' },
  })
  show(@Body() body: ShowRequestDto): Promise<ShowResponseWire> {
    return this.llamad.show(body);
  }

  /**
   * Copies a model (§3.11): 200 with an empty body. 400 `source "<x>" is invalid` / `destination "<x>" is invalid`,
   * 404 `model "<source>" not found`.
   */
  @Post('copy')
  @AdminOnly()
  @HttpCode(200)
  @ApiRoute({
    id: 'copyModel',
    adminOnly: true,
    summary: 'Copy a model',
    tag: ApiTag.Ollama,
    ok: { description: 'Copied (empty body).' },
  })
  async copy(@Body() body: CopyRequestDto, @Res() reply: FastifyReply): Promise<void> {
    await this.llamad.copy(body);
    await reply.status(200).send();
  }

  /**
   * Deletes a model (§3.12; JSON body with `model` or `name`): 200 with an empty body. 400 `model is required` /
   * `name "<x>" is invalid`, 404 `model '<x>' not found`. Unused blobs are removed; a loaded runner is unloaded.
   */
  @Delete('delete')
  @AdminOnly()
  @HttpCode(200)
  @ApiRoute({
    id: 'deleteModel',
    adminOnly: true,
    summary: 'Delete a model',
    tag: ApiTag.Ollama,
    ok: { description: 'Deleted (empty body).' },
  })
  async delete(@Body() body: DeleteRequestDto, @Res() reply: FastifyReply): Promise<void> {
    await this.llamad.delete(body);
    await reply.status(200).send();
  }

  /**
   * Creates a model (§3.9, the spec's form first). Validation errors are plain 4xx responses; then progress records
   * stream as NDJSON (`parsing modelfile` … `success`), or only the final record with `stream: false`.
   * FROM / ADAPTER may name server files only when the connection comes from a loopback address (the socket's
   * address: forwarding headers are not trusted); other clients upload blobs and use `FROM @sha256:…`.
   */
  @Post('create')
  @AdminOnly()
  @HttpCode(200)
  @ApiRoute({
    id: 'createModel',
    adminOnly: true,
    summary: 'Create a model',
    description:
      'From a Modelfile (`modelfile`) or the JSON fields; NDJSON progress by default, `stream: false` for one.',
    tag: ApiTag.Ollama,
    ok: { description: 'Progress records, the last `success`.', ndjson: 'ProgressResponse', json: 'ProgressResponse' },
  })
  async create(@Body() body: CreateRequestDto, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const progress = this.llamad.create(body, requesterOf(req, this.config));
    if (!progress.stream) {
      await this.responder.json(reply, progress.response$);
      return;
    }
    await this.responder.ndjson(reply, progress.observable, ollamaErrorLine);
  }
}

/**
 * The create requester of a request (docs/security.md "Model files and paths"): local — may name server files in
 * FROM / ADAPTER — only when the TCP peer is loopback (127.0.0.0/8, ::1, ::ffff:127.x), the request carries no
 * `Origin` (a browser page, even an allowed one, never names server files), and either no API keys are configured
 * or the operator set LLAMAD_ALLOW_SERVER_PATHS=1 (with keys, the daemon is meant for clients that are not trusted
 * with its file system, and a reverse proxy on the same machine makes every client loopback).
 */
export function requesterOf(req: FastifyRequest, config: DaemonConfig): CreateRequester {
  const keysConfigured = config.apiKeys.length > 0 || config.apiKeysFile !== '';
  const local =
    isLoopbackAddress(req.raw.socket?.remoteAddress) &&
    req.headers.origin === undefined &&
    (!keysConfigured || config.allowServerPaths);
  return { local };
}
