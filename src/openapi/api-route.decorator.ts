import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiExtraModels, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { ref } from './schemas/json-schema';
import { schemaClosure, schemaModel } from './schemas/schema-models';

/** The OpenAPI tags: one per API dialect, plus the operational routes. */
export enum ApiTag {
  Ollama = 'Ollama',
  OpenAI = 'OpenAI',
  Anthropic = 'Anthropic',
  Operations = 'Operations',
}

/** The error schema of each tag's dialect (what its exception filter renders). */
const ERROR_SCHEMA: Record<ApiTag, string> = {
  [ApiTag.Ollama]: 'OllamaError',
  [ApiTag.OpenAI]: 'OpenAIError',
  [ApiTag.Anthropic]: 'AnthropicError',
  [ApiTag.Operations]: 'OllamaError',
};

/** Media types of a success response; each value names a component schema (src/openapi/schemas). */
export interface ApiRouteSuccess {
  /** Default 200. */
  status?: number;
  description: string;
  /** `application/json` body. */
  json?: string;
  /** `application/x-ndjson` stream: one JSON value of this schema per line. */
  ndjson?: string;
  /** `text/event-stream`: this schema describes one event (see sseEvent). */
  sse?: string;
  /** `text/plain` body with this example. */
  text?: string;
}

/** The documentation of one route. */
export interface ApiRouteDoc {
  /** operationId, unique across the document (camelCase, dialect-prefixed where names would clash). */
  id: string;
  summary: string;
  description?: string;
  tag: ApiTag;
  /** Request body schema (a component name) for a route whose `@Body()` is not a DTO class. */
  body?: string;
  /** The request body is raw bytes (`application/octet-stream`), streamed as is. */
  binaryBody?: boolean;
  /** The request body is `multipart/form-data` with the fields of this component schema (the file a binary string). */
  multipartBody?: string;
  /** Path parameter descriptions. */
  params?: Record<string, string>;
  ok: ApiRouteSuccess;
  /**
   * Other statuses worth naming: a description (4xx/5xx then carry the dialect's error body), or a description with
   * its own `application/json` schema (a component name).
   */
  statuses?: Record<number, string | { description: string; json: string }>;
  /** Open without an API key (`@Public()` routes): no security requirement. */
  public?: boolean;
  /**
   * A tenant-facing route (generation, embeddings): documents the 429 that a principal's rate limits and quotas
   * answer (docs/security.md "Tenants"), with the dialect's error body and rate-limit headers.
   */
  rateLimited?: boolean;
  /** Only `admin` principals may call it: documents the 403 a `user` principal gets, with the dialect's error body. */
  adminOnly?: boolean;
}

/** The rate-limit headers of a 429 (and of successful responses) per dialect; issue 33 item 2. */
const RATE_LIMIT_HEADERS: Record<ApiTag, Record<string, string>> = {
  [ApiTag.Ollama]: {},
  [ApiTag.Operations]: {},
  [ApiTag.OpenAI]: {
    'x-ratelimit-limit-requests': 'Requests per minute the key may make.',
    'x-ratelimit-remaining-requests': 'Requests left in the current window.',
    'x-ratelimit-reset-requests': 'Time until the request window resets (e.g. `1s`, `6m0s`).',
    'x-ratelimit-limit-tokens': 'Tokens (prompt + completion) per minute the key may use.',
    'x-ratelimit-remaining-tokens': 'Tokens left in the current window.',
    'x-ratelimit-reset-tokens': 'Time until the token window resets.',
  },
  [ApiTag.Anthropic]: {
    'anthropic-ratelimit-requests-limit': 'Requests per minute the key may make.',
    'anthropic-ratelimit-requests-remaining': 'Requests left in the current window.',
    'anthropic-ratelimit-requests-reset': 'RFC 3339 time the request window resets.',
    'anthropic-ratelimit-tokens-limit': 'Tokens (prompt + completion) per minute the key may use.',
    'anthropic-ratelimit-tokens-remaining': 'Tokens left in the current window.',
    'anthropic-ratelimit-tokens-reset': 'RFC 3339 time the token window resets.',
  },
};

/** The 429 of a rate-limited route: description, headers and the dialect's error body. */
function rateLimitedResponse(tag: ApiTag) {
  const headers: Record<string, { description: string; schema: { type: 'string' | 'integer' } }> = {
    'retry-after': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
  };
  for (const [name, description] of Object.entries(RATE_LIMIT_HEADERS[tag])) {
    headers[name] = { description, schema: { type: 'string' } };
  }
  const type =
    tag === ApiTag.OpenAI
      ? ' (`error.type` `rate_limit_exceeded`, or `insufficient_quota` for the daily token quota)'
      : tag === ApiTag.Anthropic
        ? ' (`error.type` `rate_limit_error`)'
        : '';
  return ApiResponse({
    status: 429,
    description:
      "The caller's requests per minute, tokens per minute, tokens per day or concurrent requests are used up " +
      `(docs/security.md "Tenants")${type}; retry after \`retry-after\` seconds.`,
    headers,
    content: jsonContent(ERROR_SCHEMA[tag]),
  });
}

/** The component schemas a route's documentation names (before their own `$ref`s). */
function namedSchemas(doc: ApiRouteDoc): string[] {
  const names = [ERROR_SCHEMA[doc.tag], doc.body, doc.multipartBody, doc.ok.json, doc.ok.ndjson, doc.ok.sse];
  for (const response of Object.values(doc.statuses ?? {})) {
    if (typeof response !== 'string') names.push(response.json);
  }
  return names.filter((name): name is string => name !== undefined);
}

/**
 * Documents a route for the OpenAPI document (src/openapi): operation id, summary, tag, request body, success
 * content by media type (JSON, NDJSON stream, server-sent events, text), the dialect's error body as the `default`
 * response, the 429 of tenant-facing routes and the 403 of admin-only ones (issue 33), and registers the component
 * schemas it names (transitively) with `@ApiExtraModels`. Keeps the controllers' decorations to one call.
 */
export function ApiRoute(doc: ApiRouteDoc): MethodDecorator {
  const decorators: MethodDecorator[] = [
    ApiOperation({
      operationId: doc.id,
      summary: doc.summary,
      ...(doc.description ? { description: doc.description } : {}),
      ...(doc.public ? { security: [] } : {}),
    }),
    ApiTags(doc.tag),
    ApiResponse({ status: doc.ok.status ?? 200, description: doc.ok.description, content: successContent(doc.ok) }),
    ApiResponse({ status: 'default', description: 'Error', content: jsonContent(ERROR_SCHEMA[doc.tag]) }),
  ];
  // Register every schema the route names, and those they name, the Nest way: a host's plain
  // SwaggerModule.createDocument(app) then resolves each `$ref` (mergeLlamadOpenApi is not needed for that).
  decorators.push(ApiExtraModels(...schemaClosure(namedSchemas(doc)).map(schemaModel)));
  if (doc.rateLimited) decorators.push(rateLimitedResponse(doc.tag));
  if (doc.adminOnly) {
    decorators.push(
      ApiResponse({
        status: 403,
        description: "The caller's policy role is `user`: only `admin` principals may call this route.",
        content: jsonContent(ERROR_SCHEMA[doc.tag]),
      }),
    );
  }
  if (doc.body) decorators.push(ApiBody({ required: true, schema: ref(doc.body) }));
  if (doc.binaryBody) {
    decorators.push(
      ApiConsumes('application/octet-stream'),
      ApiBody({ required: true, schema: { type: 'string', description: 'The raw bytes.' } }),
    );
  }
  if (doc.multipartBody) {
    decorators.push(ApiConsumes('multipart/form-data'), ApiBody({ required: true, schema: ref(doc.multipartBody) }));
  }
  for (const [name, description] of Object.entries(doc.params ?? {})) {
    decorators.push(ApiParam({ name, description, type: 'string' }));
  }
  for (const [status, response] of Object.entries(doc.statuses ?? {})) {
    const code = Number(status);
    const description = typeof response === 'string' ? response : response.description;
    const schema = typeof response === 'string' ? (code >= 400 ? ERROR_SCHEMA[doc.tag] : undefined) : response.json;
    decorators.push(ApiResponse({ status: code, description, ...(schema ? { content: jsonContent(schema) } : {}) }));
  }
  return applyDecorators(...decorators);
}

function jsonContent(schema: string) {
  return { 'application/json': { schema: ref(schema) } };
}

function successContent(ok: ApiRouteSuccess) {
  const content: Record<string, { schema: ReturnType<typeof ref>; example?: string }> = {};
  if (ok.json) content['application/json'] = { schema: ref(ok.json) };
  if (ok.ndjson) content['application/x-ndjson'] = { schema: ref(ok.ndjson) };
  if (ok.sse) content['text/event-stream'] = { schema: ref(ok.sse) };
  if (ok.text !== undefined) content['text/plain'] = { schema: { type: 'string' }, example: ok.text };
  return Object.keys(content).length > 0 ? content : undefined;
}
