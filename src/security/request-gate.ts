import { Logger } from '@nestjs/common';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import { HostPolicy } from './host-policy';
import { OriginPolicy } from './origin-policy';

/** Methods a preflight allows (gin-contrib/cors DefaultConfig, reference/ollama-api.md §1.2). */
export const CORS_ALLOWED_METHODS = 'GET,POST,PUT,PATCH,DELETE,HEAD,OPTIONS';

/** How long a browser may cache a preflight answer, seconds (12 h, gin-contrib's default). */
export const CORS_MAX_AGE_SECONDS = 12 * 60 * 60;

/**
 * Request headers a browser page may send (answered in `Access-Control-Allow-Headers`): Ollama's list plus the
 * headers the OpenAI and Anthropic SDKs send from a browser. Header families matched by prefix are in
 * {@link CORS_ALLOWED_HEADER_PREFIXES}.
 */
export const CORS_ALLOWED_HEADERS: readonly string[] = [
  'Authorization',
  'Content-Type',
  'User-Agent',
  'Accept',
  'X-Requested-With',
  'x-api-key',
  'x-request-id',
  'anthropic-version',
  'anthropic-beta',
  'anthropic-dangerous-direct-browser-access',
  'OpenAI-Beta',
  'OpenAI-Organization',
  'OpenAI-Project',
  'x-stainless-arch',
  'x-stainless-async',
  'x-stainless-custom-poll-interval',
  'x-stainless-helper-method',
  'x-stainless-lang',
  'x-stainless-os',
  'x-stainless-package-version',
  'x-stainless-poll-helper',
  'x-stainless-retry-count',
  'x-stainless-runtime',
  'x-stainless-runtime-version',
  'x-stainless-timeout',
];

/** Header families allowed by prefix when a preflight asks for them (`openai-*`, `x-stainless-*`, `anthropic-*`). */
export const CORS_ALLOWED_HEADER_PREFIXES: readonly string[] = ['openai-', 'x-stainless-', 'anthropic-'];

/** What the gate does with one request. `headers` are added to the response (CORS). */
export type GateVerdict =
  | { action: 'forbid'; reason: 'origin' | 'host' }
  | { action: 'bad-request'; reason: 'duplicate-host' }
  | { action: 'preflight'; headers: Record<string, string> }
  | { action: 'pass'; headers: Record<string, string> };

/** The parts of a request the gate reads. */
export interface GateRequest {
  method: string;
  headers: IncomingHttpHeaders;
  /** The request target as sent (`/api/tags`, or the absolute form `http://host/api/tags`); default origin-form. */
  url?: string;
  /** Header names and values as received (node's `rawHeaders`), to see repeated headers node folds away. */
  rawHeaders?: readonly string[];
}

/** The host of an absolute-form request target (`http://evil.example/api/tags` → `evil.example`), else undefined. */
function absoluteFormHost(url: string | undefined): string | undefined {
  if (url === undefined || !/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return undefined;
  try {
    return new URL(url).host;
  } catch {
    return '\u0000invalid';
  }
}

/** How many times a header (lower-case name) appears in `rawHeaders`. */
function headerCount(rawHeaders: readonly string[] | undefined, name: string): number {
  let count = 0;
  for (let i = 0; rawHeaders !== undefined && i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].toLowerCase() === name) count++;
  }
  return count;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The daemon's first line of defence against web pages (reference/ollama-api.md §1.2 CORS, §1.3 Host guard;
 * docs/security.md): judges every request before routing, body parsing or any handler, whatever its method or
 * content type. A request whose `Origin` is not allowed, or whose `Host` fails the DNS-rebinding check on a loopback
 * bind, is forbidden (403, empty body). An `OPTIONS` request that passes is answered 204 at once (a preflight, with
 * the CORS headers when it carries an Origin). Any other request passes, with `Access-Control-Allow-Origin` and
 * `Vary: Origin` when it carries an allowed Origin. Requests without an Origin (curl, SDKs) are not a CORS matter.
 */
export class RequestGate {
  constructor(
    private readonly origins: OriginPolicy,
    private readonly hosts: HostPolicy,
  ) {}

  /**
   * Decides what to do with a request. Never throws. Two `Host` headers are a 400 (Go's net/http refuses them), and
   * an absolute-form request line (`GET http://evil.example/api/tags HTTP/1.1`) is judged by its URL's host, which
   * is the one Go's server uses, whatever the Host header says.
   */
  judge(request: GateRequest): GateVerdict {
    if (headerCount(request.rawHeaders, 'host') > 1) return { action: 'bad-request', reason: 'duplicate-host' };
    const origin = single(request.headers.origin);
    if (origin !== undefined && !this.origins.allows(origin)) return { action: 'forbid', reason: 'origin' };
    const host = absoluteFormHost(request.url) ?? single(request.headers.host);
    if (!this.hosts.allows(host)) return { action: 'forbid', reason: 'host' };
    const headers: Record<string, string> = {};
    if (origin !== undefined) {
      headers['access-control-allow-origin'] = this.origins.allowsAll ? '*' : origin;
      headers['vary'] = 'Origin';
    }
    if (request.method !== 'OPTIONS') return { action: 'pass', headers };
    if (origin !== undefined) {
      headers['access-control-allow-methods'] = CORS_ALLOWED_METHODS;
      headers['access-control-allow-headers'] = this.allowedHeaders(
        single(request.headers['access-control-request-headers']),
      );
      headers['access-control-max-age'] = String(CORS_MAX_AGE_SECONDS);
      headers['vary'] = 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers';
    }
    return { action: 'preflight', headers };
  }

  /** The static list plus the requested headers of an allowed family (`openai-*`, `x-stainless-*`, `anthropic-*`). */
  private allowedHeaders(requested: string | undefined): string {
    const known = new Set(CORS_ALLOWED_HEADERS.map((h) => h.toLowerCase()));
    const extra = (requested ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter((h) => h !== '' && !known.has(h) && CORS_ALLOWED_HEADER_PREFIXES.some((p) => h.startsWith(p)));
    return [...CORS_ALLOWED_HEADERS, ...new Set(extra)].join(', ');
  }
}

/**
 * Installs the {@link RequestGate} as Fastify's first `onRequest` hook, so it runs before routing, body parsing,
 * guards and handlers on every route (unknown ones included). CORS headers go on the raw response, which streamed
 * replies (written by StreamResponder after `reply.hijack()`) keep as well as ordinary ones.
 * @param options.origins OLLAMA_ORIGINS entries; `listenAddress` is read from the server once it listens.
 * @param options.applies which requests the gate judges, from the path (query string removed) and the request (its
 *   matched route); default every request (the daemon). LlamadModule in a host application passes "one of the
 *   module's routes", so the host's own routes are untouched, even under `/api` or `/v1`.
 */
export function installRequestGate(
  fastify: FastifyInstance,
  options: { origins: readonly string[]; applies?: (path: string, request: FastifyRequest) => boolean },
): RequestGate {
  const logger = new Logger('Security');
  const hosts = new HostPolicy(() => {
    const address = fastify.server.address();
    return typeof address === 'object' && address !== null ? address.address : undefined;
  });
  const gate = new RequestGate(new OriginPolicy(options.origins), hosts);
  fastify.addHook('onRequest', (request, reply, done) => {
    if (options.applies && !options.applies(request.url.split('?')[0], request)) {
      done();
      return;
    }
    const verdict = gate.judge({
      method: request.method,
      headers: request.headers,
      url: request.raw.url,
      rawHeaders: request.raw.rawHeaders,
    });
    if (verdict.action === 'bad-request') {
      void reply
        .code(400)
        .header('connection', 'close')
        .type('text/plain; charset=utf-8')
        .send('400 Bad Request: too many Host headers');
      return;
    }
    if (verdict.action === 'forbid') {
      logger.warn(
        `403 ${request.method} ${request.url.split('?')[0]}: ` +
          (verdict.reason === 'origin'
            ? `origin ${JSON.stringify(String(request.headers.origin).slice(0, 200))} is not allowed (OLLAMA_ORIGINS)`
            : `host ${JSON.stringify(String(request.headers.host).slice(0, 200))} is not allowed on a loopback bind`),
      );
      void reply.code(403).send();
      return;
    }
    for (const [name, value] of Object.entries(verdict.headers)) reply.raw.setHeader(name, value);
    if (verdict.action === 'preflight') {
      void reply.code(204).send();
      return;
    }
    done();
  });
  return gate;
}
