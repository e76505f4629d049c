import { Controller, Head, Param, Post, Req, Res } from '@nestjs/common';
import { AdminOnly, LlamadRoutes } from '../../security';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { LlamadService } from './llamad.service';

/**
 * Blob uploads (reference/ollama-api.md §3.10): `HEAD /api/blobs/:digest` and `POST /api/blobs/:digest`. The digest
 * must match `^sha256[:-][0-9a-fA-F]{64}$` (else 400 `invalid digest format`). POST bodies arrive unparsed and
 * without a size limit (the body parser passes this route's stream through: common/http/json-body.parser.ts).
 */
@LlamadRoutes()
@Controller('api/blobs')
export class BlobsController {
  constructor(private readonly llm: LlamadService) {}

  /** 200 when the blob exists; 404 `blob "sha256:…" not found` otherwise (no body on HEAD). */
  @Head(':digest')
  @ApiRoute({
    id: 'checkBlob',
    summary: 'Check whether a blob exists',
    tag: ApiTag.Ollama,
    params: { digest: '`sha256:<64 hex>` (or `sha256-<hex>`).' },
    ok: { description: 'The blob exists.' },
    statuses: { 404: 'No such blob.' },
  })
  async head(@Param('digest') digest: string, @Res() reply: FastifyReply): Promise<void> {
    await this.llm.checkBlob(digest);
    await reply.status(200).send();
  }

  /**
   * Streams the raw body (any content type) into blobs/ while hashing: 201 when created, 200 when the blob already
   * existed, 400 `digest mismatch, expected "sha256:…", got "sha256:…"` (nothing kept). Empty response body.
   */
  @Post(':digest')
  @AdminOnly()
  @ApiRoute({
    id: 'pushBlob',
    summary: 'Upload a blob',
    description: 'The raw bytes (any content type, no size limit), verified against the digest.',
    tag: ApiTag.Ollama,
    params: { digest: '`sha256:<64 hex>` of the body.' },
    ok: { status: 201, description: 'Created.' },
    binaryBody: true,
    statuses: { 200: 'The blob already existed.', 400: 'Invalid digest, or the body does not match it.' },
    adminOnly: true,
  })
  async upload(@Param('digest') digest: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const body = req.body instanceof Readable ? req.body : req.raw;
    const created = await this.llm.receiveBlob(digest, body);
    await reply.status(created ? 201 : 200).send();
  }
}
