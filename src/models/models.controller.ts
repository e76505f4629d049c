import { Body, Controller, Delete, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { map } from 'rxjs';
import { ollamaErrorLine, StreamResponder } from '../common/http';
import { isLoopbackAddress } from '../security';
import { CopyRequestDto, DeleteRequestDto } from './dto/copy-delete-request.dto';
import { CreateRequestDto } from './dto/create-request.dto';
import { ListResponseWire, ShowResponseWire } from './dto/model-responses.dto';
import { ShowRequestDto } from './dto/show-request.dto';
import { fromCreateRequest, toListModelWire, toProgressWire, toShowResponseWire } from './models.mapper';
import { CreateRequester, ModelsService } from './models.service';

/**
 * The model catalogue routes (reference/ollama-api.md §3): GET|HEAD /api/tags, POST /api/show, POST /api/create,
 * POST /api/copy, DELETE /api/delete.
 */
@Controller('api')
export class ModelsController {
  constructor(
    private readonly models: ModelsService,
    private readonly responder: StreamResponder,
  ) {}

  /** Local models, newest first; `{"models": []}` when there are none (§3.6). */
  @Get('tags')
  async tags(): Promise<ListResponseWire> {
    const models = await this.models.list();
    return { models: models.map(toListModelWire) };
  }

  /** Model information (§3.8). 400 `model is required`, 404 `model '<name:tag>' not found`. */
  @Post('show')
  @HttpCode(200)
  async show(@Body() body: ShowRequestDto): Promise<ShowResponseWire> {
    const info = await this.models.show(body.model || body.name || '', body.verbose ?? false);
    return toShowResponseWire(info, { system: body.system, options: body.options });
  }

  /**
   * Copies a model (§3.11): 200 with an empty body. 400 `source "<x>" is invalid` / `destination "<x>" is invalid`,
   * 404 `model "<source>" not found`.
   */
  @Post('copy')
  @HttpCode(200)
  async copy(@Body() body: CopyRequestDto, @Res() reply: FastifyReply): Promise<void> {
    await this.models.copy(body.source ?? '', body.destination ?? '');
    await reply.status(200).send();
  }

  /**
   * Deletes a model (§3.12; JSON body with `model` or `name`): 200 with an empty body. 400 `model is required` /
   * `name "<x>" is invalid`, 404 `model '<x>' not found`. Unused blobs are removed; a loaded runner is unloaded.
   */
  @Delete('delete')
  @HttpCode(200)
  async delete(@Body() body: DeleteRequestDto, @Res() reply: FastifyReply): Promise<void> {
    await this.models.delete(body.model || body.name || '');
    await reply.status(200).send();
  }

  /**
   * Creates a model (§3.9, the spec's form first). Validation errors are plain 4xx responses; then progress records
   * stream as NDJSON (`parsing modelfile` … `success`), or only the final record with `stream: false`.
   * FROM / ADAPTER may name server files only when the connection comes from a loopback address (the socket's
   * address: forwarding headers are not trusted); other clients upload blobs and use `FROM @sha256:…`.
   */
  @Post('create')
  @HttpCode(200)
  async create(@Body() body: CreateRequestDto, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const plan = await this.models.prepareCreate(fromCreateRequest(body), requesterOf(req));
    const progress$ = this.models.create(plan).pipe(map(toProgressWire));
    if (body.stream === false) {
      await this.responder.json(reply, progress$);
      return;
    }
    await this.responder.ndjson(reply, progress$, ollamaErrorLine);
  }
}

/** The create requester of a request: local when the TCP peer is loopback (127.0.0.0/8, ::1, ::ffff:127.x). */
function requesterOf(req: FastifyRequest): CreateRequester {
  return { local: isLoopbackAddress(req.raw.socket?.remoteAddress) };
}
