import { Validator } from '@seriousme/openapi-schema-validator';
import { Body, Controller, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { ApiProperty, DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildOpenApiDocument, LlamadModule, mergeLlamadOpenApi, NATIVE_BINDING, setupOpenApi } from '../../src';
import { FakeBinding } from '../utils/fake-binding';
import { openApiRefs } from '../utils/host';

// OpenAPI for a host application (issue 24 §4): llamad's own document for its prefix, and the host's SwaggerModule
// document completed with llamad's schemas — both valid OpenAPI 3.1 with every `$ref` resolved.

class NoteDto {
  @ApiProperty() text!: string;
  /** 3.0's `nullable`, which the merge must turn into a 3.1 type array. */
  @ApiProperty({ type: String, nullable: true, required: false }) tag?: string | null;
}

@Controller('notes')
class NotesController {
  @Post()
  create(@Body() body: NoteDto): NoteDto {
    return body;
  }
}

/** The `$ref`s of `doc` that point at no component schema. */
function unresolved(doc: OpenAPIObject): string[] {
  const schemas = doc.components?.schemas ?? {};
  return [...new Set(openApiRefs(doc))].filter((ref) => !(ref.replace('#/components/schemas/', '') in schemas));
}

/** Validation errors of `doc` as OpenAPI 3.1 (empty when valid). */
async function invalid(doc: OpenAPIObject): Promise<string> {
  const validator = new Validator();
  const result = await validator.validate(structuredClone(doc) as unknown as Record<string, unknown>);
  assert.equal(validator.version, '3.1');
  return result.valid ? '' : JSON.stringify(result.errors).slice(0, 2000);
}

describe('OpenAPI in a host application', () => {
  let app: NestFastifyApplication;
  let base: string;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'llamad-host-openapi-'));
    @Module({
      controllers: [NotesController],
      imports: [
        LlamadModule.forRoot({
          config: { modelsDir: join(dir, 'models'), logging: false },
          prefix: '/llm',
          providers: [{ provide: NATIVE_BINDING, useValue: () => new FakeBinding() }],
        }),
      ],
    })
    class HostModule {}
    const adapter = new FastifyAdapter();
    app = await NestFactory.create<NestFastifyApplication>(HostModule, adapter, { logger: false });
    setupOpenApi(app, '/llm');
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
  });

  after(async () => {
    await app?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("the host's plain SwaggerModule document resolves every $ref (schemas registered with @ApiExtraModels)", async () => {
    const doc = SwaggerModule.createDocument(app, new DocumentBuilder().setTitle('host').build());
    assert.deepEqual(unresolved(doc), []);
    assert.ok(openApiRefs(doc).length > 50, "llamad's routes do $ref their schemas");
    assert.ok(doc.paths['/notes'] && doc.paths['/llm/api/chat'] && doc.paths['/llm/api/usage']);
    // Declared 3.1, the plain document (as served: JSON) is valid too.
    const doc31 = SwaggerModule.createDocument(
      app,
      new DocumentBuilder().setOpenAPIVersion('3.1.0').setTitle('host').build(),
    );
    assert.equal(await invalid(JSON.parse(JSON.stringify(doc31)) as OpenAPIObject), '');
    // A union schema keeps its shape (no `type: object` laid over it by the model registration).
    const schemas = JSON.parse(JSON.stringify(doc.components?.schemas)) as Record<string, Record<string, unknown>>;
    for (const [name, schema] of Object.entries(schemas)) {
      if (schema.anyOf || schema.oneOf) assert.equal(schema.type, undefined, name);
    }
  });

  it("documents each tenant-facing route's 429 and each admin-only route's 403 with the dialect's error", () => {
    const doc = buildOpenApiDocument(app, '/llm');
    type Op = {
      responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }>; headers?: object }>;
    };
    const op = (path: string, method = 'post') => (doc.paths[`/llm${path}`] as Record<string, Op>)[method];
    const errorOf = (o: Op, status: string) => o.responses[status]?.content?.['application/json'].schema.$ref;
    for (const path of ['/api/generate', '/api/chat', '/api/embed', '/api/embeddings']) {
      assert.equal(errorOf(op(path), '429'), '#/components/schemas/OllamaError', path);
    }
    for (const path of ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses']) {
      assert.equal(errorOf(op(path), '429'), '#/components/schemas/OpenAIError', path);
      assert.ok('x-ratelimit-remaining-tokens' in (op(path).responses['429'].headers ?? {}), path);
    }
    assert.equal(errorOf(op('/v1/messages'), '429'), '#/components/schemas/AnthropicError');
    assert.ok('anthropic-ratelimit-requests-remaining' in (op('/v1/messages').responses['429'].headers ?? {}));
    assert.equal(op('/api/tags', 'get').responses['429'], undefined, 'listing routes are not rate limited');
    for (const [path, method] of [
      ['/api/create', 'post'],
      ['/api/copy', 'post'],
      ['/api/delete', 'delete'],
      ['/api/pull', 'post'],
      ['/api/push', 'post'],
      ['/api/usage', 'get'],
    ]) {
      assert.equal(errorOf(op(path, method), '403'), '#/components/schemas/OllamaError', path);
    }
    assert.equal(
      op('/api/usage', 'get').responses['200'].content?.['application/json'].schema.$ref,
      '#/components/schemas/UsageResponse',
    );
  });

  it("mergeLlamadOpenApi completes the host's document: valid 3.1, every $ref resolved, host routes kept", async () => {
    const doc = mergeLlamadOpenApi(SwaggerModule.createDocument(app, new DocumentBuilder().setTitle('host').build()));
    assert.deepEqual(unresolved(doc), []);
    assert.equal(await invalid(doc), '');
    assert.ok(doc.paths['/notes'], 'the host route');
    assert.ok(doc.paths['/llm/api/chat'] && doc.paths['/llm/v1/chat/completions'], "llamad's routes");
    const note = doc.components?.schemas?.NoteDto as { properties: { tag: { type: unknown } } };
    assert.deepEqual(note.properties.tag.type, ['string', 'null'], '3.0 nullable became a 3.1 type array');
  });

  it("buildOpenApiDocument(app, prefix) is llamad's routes alone, valid 3.1 with every $ref resolved", async () => {
    const doc = buildOpenApiDocument(app, '/llm');
    assert.deepEqual(unresolved(doc), []);
    assert.equal(await invalid(doc), '');
    assert.equal(doc.paths['/notes'], undefined, "the host's own routes are not llamad's");
    assert.ok(Object.keys(doc.paths).every((p) => p === '/llm' || p.startsWith('/llm/')));
    assert.ok(doc.paths['/llm/openapi.json']);
  });

  it('setupOpenApi(app, prefix) serves that document at <prefix>/openapi.json', async () => {
    const res = await fetch(`${base}/llm/openapi.json`);
    assert.equal(res.status, 200);
    const doc = (await res.json()) as OpenAPIObject;
    assert.deepEqual(unresolved(doc), []);
    assert.equal(await invalid(doc), '');
    assert.equal(doc.paths['/notes'], undefined);
  });

  it('refuses to merge over a host schema of the same name with other content', () => {
    const doc = SwaggerModule.createDocument(app, new DocumentBuilder().build());
    doc.components = { ...doc.components, schemas: { ...doc.components?.schemas, OllamaError: { type: 'string' } } };
    assert.throws(() => mergeLlamadOpenApi(doc), /already has a component schema named OllamaError/);
  });
});
