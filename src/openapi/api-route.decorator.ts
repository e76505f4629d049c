import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { ref } from './schemas/json-schema';

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
}

/**
 * Documents a route for the OpenAPI document (src/openapi): operation id, summary, tag, request body, success
 * content by media type (JSON, NDJSON stream, server-sent events, text) and the dialect's error body as the
 * `default` response. Keeps the controllers' decorations to one call.
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
  if (doc.body) decorators.push(ApiBody({ required: true, schema: ref(doc.body) }));
  if (doc.binaryBody) {
    decorators.push(
      ApiConsumes('application/octet-stream'),
      ApiBody({ required: true, schema: { type: 'string', description: 'The raw bytes.' } }),
    );
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
