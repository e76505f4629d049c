import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { toOllamaError } from '../common/http';
import { AUTHORIZER, RequestAuthorizer } from '../security';
import { ApiTag } from './api-route.decorator';
import { JsonSchema, OPENAPI_SCHEMAS, ref } from './schemas';

/** Where the document and the browsable page are served (under the prefix given to setupOpenApi). */
export const OPENAPI_JSON_PATH = '/openapi.json';
export const OPENAPI_DOCS_PATH = '/docs';

/** Name and version of the package this file belongs to (its nearest package.json, in src/ and in dist/src/). */
export interface PackageInfo {
  name: string;
  version: string;
  description?: string;
}

/** Reads {@link PackageInfo}: once, when this module is loaded (start-up), never on a request. */
function readPackageInfo(): PackageInfo {
  let dir = __dirname;
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string; description?: string };
      return { name: pkg.name ?? 'llamad', version: pkg.version ?? '0.0.0', description: pkg.description };
    }
    const parent = dirname(dir);
    if (parent === dir) return { name: 'llamad', version: '0.0.0' };
    dir = parent;
  }
}

const PACKAGE_INFO: Readonly<PackageInfo> = Object.freeze(readPackageInfo());

/**
 * {@link PackageInfo} of this package, read when the module was loaded: the OpenAPI document, which SwaggerModule
 * builds on the first request for it, costs no file read then.
 */
export function packageInfo(): PackageInfo {
  return PACKAGE_INFO;
}

const SECURITY_NOTE =
  'API keys are optional: without `LLAMAD_API_KEYS` / `LLAMAD_API_KEYS_FILE` every request passes; with them, every ' +
  'route but the public ones (`/`, `/api/version`) needs `Authorization: Bearer <key>` or `x-api-key: <key>` — ' +
  'this document and /docs included. Browser requests must come from an allowed Origin (OLLAMA_ORIGINS).';

/**
 * The OpenAPI 3.1 document of llamad's routes: the controllers scanned by @nestjs/swagger (operations from
 * `@ApiRoute`, request bodies from the DTOs' `@ApiProperty` or the hand-written component schemas of ./schemas), tags
 * per dialect, the optional API-key security schemes, and the two documentation routes themselves. Every `$ref`
 * resolves within the document.
 * @param prefix the route prefix LlamadModule is mounted under ('' in the daemon, e.g. `/llm` in a host): the
 *   documentation routes are described under it and, when it is not empty, only paths under it are kept, so a host's
 *   own routes stay out of llamad's document (a host documents those in its own, see {@link mergeLlamadOpenApi}).
 */
export function buildOpenApiDocument(app: INestApplication, prefix = ''): OpenAPIObject {
  const pkg = packageInfo();
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle(pkg.name)
    .setVersion(pkg.version)
    .setDescription(
      `${pkg.description ?? ''}\n\nOne daemon, three dialects: Ollama's native API (\`/api/*\`), the OpenAI API ` +
        '(`/v1/chat/completions`, `/v1/completions`, `/v1/embeddings`, `/v1/models`, `/v1/responses`) and the ' +
        `Anthropic Messages API (\`/v1/messages\`).\n\n${SECURITY_NOTE}`,
    )
    .addTag(ApiTag.Ollama, "Ollama's native API: generation, embeddings, model management (NDJSON streams).")
    .addTag(ApiTag.OpenAI, 'OpenAI-compatible Chat Completions, Completions, Embeddings, Models and Responses.')
    .addTag(ApiTag.Anthropic, 'Anthropic-compatible Messages API.')
    .addTag(ApiTag.Operations, 'Health, version and this documentation.')
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', bearerFormat: 'API key', description: 'An API key as a bearer token.' },
      'bearer',
    )
    .addApiKey({ type: 'apiKey', in: 'header', name: 'x-api-key', description: 'An API key.' }, 'apiKey')
    .build();
  // Either scheme, or none when no keys are configured (`{}`: an empty requirement, i.e. optional).
  config.security = [{ bearer: [] }, { apiKey: [] }, {}];
  const document = SwaggerModule.createDocument(app, config, { autoTagControllers: false });
  // The hand-written schemas are JSON Schema 2020-12 (3.1); swagger's SchemaObject type is the 3.0 shape.
  document.components = {
    ...document.components,
    schemas: { ...document.components?.schemas, ...(OPENAPI_SCHEMAS as Schemas) },
  };
  const paths = prefix
    ? Object.fromEntries(Object.entries(document.paths).filter(([path]) => isUnder(path, prefix)))
    : document.paths;
  document.paths = { ...paths, ...documentationPaths(prefix), ...webUiPath(app, prefix) };
  return toOpenApi31(document);
}

type Schemas = NonNullable<NonNullable<OpenAPIObject['components']>['schemas']>;

/** Whether an OpenAPI path is `prefix` itself or below it. */
function isUnder(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

/**
 * Makes a host application's own OpenAPI document (its `SwaggerModule.createDocument(app, config)`, which lists
 * llamad's routes with the host's) complete for them: adds llamad's component schemas that its operations `$ref`,
 * its API-key security schemes and its tags where the host has none of those names, and rewrites the document to
 * OpenAPI 3.1 (llamad's schemas are JSON Schema 2020-12; the 3.0 forms the host's scanner emitted — `nullable`,
 * boolean exclusive bounds — are converted). Mutates and returns `document`.
 * @throws Error when the host already has a component schema of one of llamad's names with other content (the host's
 *   `$ref`s and llamad's would then point at the same, wrong, schema).
 */
export function mergeLlamadOpenApi<T extends OpenAPIObject>(document: T): T {
  const schemas: Schemas = { ...document.components?.schemas };
  for (const [name, schema] of Object.entries(OPENAPI_SCHEMAS)) {
    const existing = schemas[name];
    if (existing !== undefined && JSON.stringify(existing) !== JSON.stringify(schema)) {
      throw new Error(`the host's OpenAPI document already has a component schema named ${name}`);
    }
    schemas[name] = schema as Schemas[string];
  }
  const securitySchemes = { ...document.components?.securitySchemes };
  securitySchemes.bearer ??= {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'API key',
    description: 'An API key as a bearer token.',
  };
  securitySchemes.apiKey ??= { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'An API key.' };
  document.components = { ...document.components, schemas, securitySchemes };
  const tags = [...(document.tags ?? [])];
  for (const name of Object.values(ApiTag)) {
    if (!tags.some((t) => t.name === name)) tags.push({ name });
  }
  document.tags = tags;
  document.openapi = '3.1.0';
  return toOpenApi31(document);
}

/** The documentation routes, which SwaggerModule registers on Fastify directly (no controller to scan). */
function documentationPaths(prefix: string): OpenAPIObject['paths'] {
  const error = { description: 'Error', content: { 'application/json': { schema: ref('OllamaError') } } };
  return {
    [`${prefix}${OPENAPI_JSON_PATH}`]: {
      get: {
        operationId: 'getOpenApiDocument',
        summary: 'This OpenAPI 3.1 document',
        tags: [ApiTag.Operations],
        responses: {
          200: { description: 'The document.', content: { 'application/json': { schema: { type: 'object' } } } },
          default: error,
        },
      },
    },
    [`${prefix}${OPENAPI_DOCS_PATH}`]: {
      get: {
        operationId: 'getApiDocs',
        summary: 'Browsable API documentation (Swagger UI)',
        tags: [ApiTag.Operations],
        responses: {
          200: { description: 'An HTML page.', content: { 'text/html': { schema: { type: 'string' } } } },
          default: error,
        },
      },
    },
  } as OpenAPIObject['paths'];
}

/** `<prefix>/ui`, the built-in web UI's page (src/ui; docs/ui.md), when it is mounted; its assets are not listed. */
function webUiPath(app: INestApplication, prefix: string): OpenAPIObject['paths'] {
  const fastify = app.getHttpAdapter().getInstance() as FastifyInstance;
  const path = `${prefix}/ui`;
  if (!fastify.hasRoute({ method: 'GET', url: path })) return {};
  const get = {
    operationId: 'getWebUi',
    summary: 'The built-in web UI (redirects to the page at `/ui/`; LLAMAD_UI=0 turns it off)',
    tags: [ApiTag.Operations],
    responses: {
      200: { description: 'An HTML page.', content: { 'text/html': { schema: { type: 'string' } } } },
      308: { description: 'To the same path with a trailing slash.' },
      default: { description: 'Error', content: { 'application/json': { schema: ref('OllamaError') } } },
    },
  };
  return { [path]: { get } } as OpenAPIObject['paths'];
}

/**
 * Rewrites what @nestjs/swagger may still emit in the 3.0 form into 3.1 (JSON Schema 2020-12): `nullable: true` →
 * a `type` array or an `anyOf` with `{type: 'null'}`; boolean `exclusiveMinimum`/`exclusiveMaximum` → numbers.
 * Mutates and returns the document.
 */
export function toOpenApi31<T extends object>(document: T): T {
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(visit);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const schema = node as JsonSchema;
    for (const value of Object.values(schema)) visit(value);
    if (schema.nullable !== undefined) {
      const nullable = schema.nullable === true;
      delete schema.nullable;
      if (nullable) makeNullable(schema);
    }
    for (const [bound, limit] of [
      ['exclusiveMinimum', 'minimum'],
      ['exclusiveMaximum', 'maximum'],
    ] as const) {
      if (typeof schema[bound] !== 'boolean') continue;
      if (schema[bound] === true && typeof schema[limit] === 'number') {
        schema[bound] = schema[limit];
        delete schema[limit];
      } else {
        delete schema[bound];
      }
    }
  };
  visit(document);
  return document;
}

function makeNullable(schema: JsonSchema): void {
  if (typeof schema.type === 'string' && schema.enum === undefined && schema.const === undefined) {
    schema.type = [schema.type, 'null'];
  } else if (Array.isArray(schema.type)) {
    if (!schema.type.includes('null')) schema.type = [...(schema.type as string[]), 'null'];
  } else {
    const inner = { ...schema };
    for (const key of Object.keys(schema)) {
      if (key !== 'description' && key !== 'title') delete schema[key];
    }
    schema.anyOf = [inner, { type: 'null' }];
  }
}

/**
 * Serves the document at `<prefix>/openapi.json` and Swagger UI at `<prefix>/docs` (assets under `<prefix>/docs/`).
 * These routes are registered on Fastify directly, so the Origin/Host gate (an onRequest hook on every route) covers
 * them but the Nest guard does not: a hook here asks the same AUTHORIZER as every non-public route — with API keys
 * configured the document and the page need a key (the document lists every route and field; nothing in it is
 * secret, but it is not needed before a client has a key); without keys they are open like everything else. The
 * document is built on the first request (after every module's routes exist).
 */
export function setupOpenApi(app: INestApplication, prefix = ''): void {
  const jsonPath = `${prefix}${OPENAPI_JSON_PATH}`;
  const docsPath = `${prefix}${OPENAPI_DOCS_PATH}`;
  const authorizer = app.get<RequestAuthorizer>(AUTHORIZER, { strict: false });
  const fastify = app.getHttpAdapter().getInstance() as FastifyInstance;
  const isDocumentationRoute = (route: string | undefined): boolean =>
    route !== undefined && (route === jsonPath || route === docsPath || route.startsWith(`${docsPath}/`));
  fastify.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (!isDocumentationRoute(request.routeOptions.url)) return;
    try {
      await authorizer.authorize({
        method: request.method,
        route: request.routeOptions.url ?? '',
        headers: request.headers,
        remoteAddress: request.socket.remoteAddress,
      });
    } catch (err) {
      const { status, message } = toOllamaError(err);
      return reply.code(status).type('application/json; charset=utf-8').send({ error: message });
    }
  });
  // SwaggerModule builds the document on the first request and keeps it.
  SwaggerModule.setup(docsPath, app, () => buildOpenApiDocument(app, prefix), {
    jsonDocumentUrl: jsonPath,
    raw: ['json'],
    customSiteTitle: `${packageInfo().name} API`,
    swaggerOptions: { persistAuthorization: false },
  });
}
