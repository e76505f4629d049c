import { Validator } from '@seriousme/openapi-schema-validator';
import type { FastifyInstance } from 'fastify';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeBinding } from '../utils/fake-binding';
import { createTestApp, TestApp } from '../utils/test-app';

/** The parts of an OpenAPI document these tests read. */
interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  tags: Array<{ name: string }>;
  paths: Record<string, Record<string, { operationId?: string; summary?: string; tags?: string[] }>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
}

/** One route of the router: upper-case method and the path as registered (`/v1/models/:model`). */
interface Route {
  method: string;
  path: string;
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * Every route in Fastify's own route table, read from `printRoutes({commonPrefix: false})`: a tree whose lines are
 * `<indent>├── <path part> (<METHODS>)`, each part continuing its parent's path, one indent level per 4 characters.
 */
function routeTable(fastify: FastifyInstance): Route[] {
  const routes: Route[] = [];
  const parts: string[] = [];
  for (const line of fastify.printRoutes({ commonPrefix: false }).split('\n')) {
    const node = /^((?:│ {3}| {4})*)(?:├── |└── )(.+)$/.exec(line);
    if (!node) continue;
    const [, part, methods] = /^(.*?)(?: \(([A-Z, ]+)\))?$/.exec(node[2]) ?? [];
    parts.length = node[1].length / 4;
    parts.push(part);
    // A wildcard's node drops the slash before it in this print (`docs` → `*`): `/docs/*`.
    const path = parts.join('').replace(/([^/])\*$/, '$1/*');
    for (const method of methods ? methods.split(', ') : []) routes.push({ method, path });
  }
  return routes;
}

/** The router's path in OpenAPI form: `:name` → `{name}`. */
function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** Every `$ref` anywhere in `node`. */
function refs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => refs(n, out));
  else if (typeof node === 'object' && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') out.push(value);
      else refs(value, out);
    }
  }
  return out;
}

/** Whether a key named `name` occurs anywhere in `node`. */
function hasKey(node: unknown, name: string): boolean {
  if (Array.isArray(node)) return node.some((n) => hasKey(n, name));
  if (typeof node !== 'object' || node === null) return false;
  return Object.entries(node).some(([key, value]) => key === name || hasKey(value, name));
}

describe('OpenAPI document (/openapi.json, /docs)', () => {
  let t: TestApp;
  let doc: OpenApiDocument;

  before(async () => {
    t = await createTestApp({ binding: new FakeBinding() });
    const res = await fetch(`${t.baseUrl}/openapi.json`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    doc = (await res.json()) as OpenApiDocument;
  });

  after(async () => {
    await t.close();
  });

  it('is a valid OpenAPI 3.1 document (@seriousme/openapi-schema-validator)', async () => {
    assert.equal(doc.openapi, '3.1.0');
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc) as unknown as Record<string, unknown>);
    assert.equal(validator.version, '3.1');
    assert.deepEqual(result.errors, undefined, JSON.stringify(result.errors, null, 2));
    assert.equal(result.valid, true);
    // 3.1 forms only: nullable is a type array / anyOf with null, never the 3.0 keyword.
    assert.equal(hasKey(doc, 'nullable'), false, 'a `nullable` keyword (OpenAPI 3.0) is left in the document');
    for (const ref of new Set(refs(doc))) {
      const name = /^#\/components\/schemas\/(.+)$/.exec(ref)?.[1];
      assert.ok(name !== undefined && name in doc.components.schemas, `dangling $ref ${ref}`);
    }
  });

  it('names the package, the dialect tags and the optional API-key schemes', () => {
    assert.equal(doc.info.title, 'llamad');
    assert.match(doc.info.version, /^\d+\.\d+\.\d+/);
    assert.deepEqual(
      doc.tags.map((tag) => tag.name),
      ['Ollama', 'OpenAI', 'Anthropic', 'Operations'],
    );
    assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['apiKey', 'bearer']);
    assert.deepEqual(doc.components.securitySchemes.apiKey, {
      type: 'apiKey',
      in: 'header',
      name: 'x-api-key',
      description: 'An API key.',
    });
  });

  it('documents every route of the router and nothing else (a new route without docs fails here)', () => {
    const routes = routeTable(t.app.getHttpAdapter().getInstance() as FastifyInstance);
    assert.ok(routes.length > 20, `route table not read: ${JSON.stringify(routes)}`);
    const documented = (method: string, path: string) => doc.paths[path]?.[method.toLowerCase()] !== undefined;
    const missing: string[] = [];
    for (const { method, path } of routes) {
      // Swagger UI's assets (static files, its init script) are the page, not API routes.
      if (path.startsWith('/docs/')) continue;
      // …and so are the web UI's (src/ui): only its page, GET /ui, is documented.
      if (path.startsWith('/ui/')) continue;
      // OPTIONS is answered by the request gate; HEAD is Fastify's automatic twin of a GET unless declared alone.
      if (method === 'OPTIONS') continue;
      const p = openApiPath(path);
      if (method === 'HEAD' && (documented('HEAD', p) || documented('GET', p))) continue;
      if (!documented(method, p)) missing.push(`${method} ${path}`);
    }
    assert.deepEqual(missing, [], `routes missing from /openapi.json (add @ApiRoute): ${missing.join(', ')}`);
    // …and every documented operation is a route.
    const routed = new Set(routes.map((r) => `${r.method} ${openApiPath(r.path)}`));
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of Object.keys(item).filter((m) => HTTP_METHODS.includes(m))) {
        assert.ok(routed.has(`${method.toUpperCase()} ${path}`), `documented but not routed: ${method} ${path}`);
      }
    }
  });

  it('gives every operation a unique operationId, a summary, one dialect tag and an error response', () => {
    const tags = new Set(doc.tags.map((tag) => tag.name));
    const ids = new Set<string>();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const where = `${method.toUpperCase()} ${path}`;
        assert.ok(op.operationId, `${where}: no operationId`);
        assert.ok(!ids.has(op.operationId), `${where}: duplicate operationId ${op.operationId}`);
        ids.add(op.operationId);
        assert.ok(op.summary, `${where}: no summary`);
        assert.equal(op.tags?.length, 1, `${where}: tags ${JSON.stringify(op.tags)}`);
        assert.ok(tags.has(op.tags[0]), `${where}: undeclared tag ${op.tags[0]}`);
        assert.ok((op as { responses?: Record<string, unknown> }).responses?.default, `${where}: no error response`);
      }
    }
    assert.ok(ids.size >= 28, `only ${ids.size} operations`);
  });

  it('describes request bodies by wire name and streamed answers by media type', () => {
    const schemas = doc.components.schemas as Record<string, { properties?: Record<string, unknown> }>;
    const chat = schemas.ChatRequest.properties ?? {};
    for (const field of ['model', 'messages', 'stream', 'format', 'keep_alive', 'tools', 'options', 'think']) {
      assert.ok(field in chat, `ChatRequest.${field}`);
    }
    assert.deepEqual(chat.keep_alive && (chat.keep_alive as { oneOf: unknown[] }).oneOf, [
      { type: 'number' },
      { type: 'string' },
    ]);
    const op = (path: string, method = 'post') =>
      doc.paths[path][method] as {
        requestBody?: { content: Record<string, { schema: { $ref?: string } }> };
        responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }>;
      };
    assert.equal(
      op('/api/chat').requestBody?.content['application/json'].schema.$ref,
      '#/components/schemas/ChatRequest',
    );
    assert.deepEqual(Object.keys(op('/api/generate').responses['200'].content ?? {}).sort(), [
      'application/json',
      'application/x-ndjson',
    ]);
    assert.deepEqual(Object.keys(op('/v1/chat/completions').responses['200'].content ?? {}).sort(), [
      'application/json',
      'text/event-stream',
    ]);
    assert.equal(
      op('/v1/messages').requestBody?.content['application/json'].schema.$ref,
      '#/components/schemas/AnthropicMessagesRequest',
    );
    assert.equal(
      op('/v1/messages').responses.default.content?.['application/json'].schema.$ref,
      '#/components/schemas/AnthropicError',
    );
    assert.ok(op('/api/blobs/{digest}').requestBody?.content['application/octet-stream']);
  });

  it('GET /docs serves the Swagger UI page and its assets', async () => {
    const page = await fetch(`${t.baseUrl}/docs`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    const html = await page.text();
    assert.match(html, /<html/i);
    assert.match(html, /swagger-ui/);
    const init = await fetch(`${t.baseUrl}/docs/swagger-ui-init.js`);
    assert.equal(init.status, 200);
    assert.match(await init.text(), /"openapi":\s*"3\.1\.0"/);
    const css = await fetch(`${t.baseUrl}/docs/swagger-ui.css`);
    assert.equal(css.status, 200);
    await css.arrayBuffer();
  });

  it('keeps the Origin gate on the documentation routes', async () => {
    for (const path of ['/openapi.json', '/docs']) {
      const res = await fetch(`${t.baseUrl}${path}`, { headers: { origin: 'https://evil.example' } });
      assert.equal(res.status, 403, path);
      await res.arrayBuffer();
    }
  });
});

describe('OpenAPI routes with API keys configured', () => {
  let t: TestApp;

  before(async () => {
    t = await createTestApp({ binding: new FakeBinding(), config: { apiKeys: ['doc-key'] } });
  });

  after(async () => {
    await t.close();
  });

  it('needs a key for /openapi.json and /docs like every non-public route', async () => {
    for (const path of ['/openapi.json', '/docs', '/docs/swagger-ui-init.js', '/docs/swagger-ui.css']) {
      const res = await fetch(`${t.baseUrl}${path}`);
      assert.equal(res.status, 401, path);
      const body = (await res.json()) as { error: string };
      assert.match(body.error, /API key/, path);
      const wrong = await fetch(`${t.baseUrl}${path}`, { headers: { authorization: 'Bearer nope' } });
      assert.equal(wrong.status, 401, path);
      await wrong.arrayBuffer();
    }
    const bearer = await fetch(`${t.baseUrl}/openapi.json`, { headers: { authorization: 'Bearer doc-key' } });
    assert.equal(bearer.status, 200);
    assert.equal(((await bearer.json()) as OpenApiDocument).openapi, '3.1.0');
    const apiKey = await fetch(`${t.baseUrl}/docs`, { headers: { 'x-api-key': 'doc-key' } });
    assert.equal(apiKey.status, 200);
    assert.match(await apiKey.text(), /swagger-ui/);
    // The public routes stay public.
    const root = await fetch(`${t.baseUrl}/`);
    assert.equal(root.status, 200);
    await root.arrayBuffer();
  });
});
