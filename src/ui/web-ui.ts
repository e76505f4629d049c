import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../config/paths';

/** Where `npm run build` writes the web UI (Vite, from ui/ at the repository root): `<package>/dist/ui`. */
export const WEB_UI_ROOT = join(REPO_ROOT, 'dist', 'ui');

/** The path of the web UI under the module's prefix (`/ui`, `/llm/ui`). */
export const WEB_UI_PATH = '/ui';

/**
 * The Content-Security-Policy of every web UI response (docs/ui.md "CSP"): scripts, styles and connections only from
 * the daemon itself (no CDN, no inline script, no `eval`), images also from `data:`/`blob:` URLs (attached and pasted
 * images are shown from memory), no plugins, no framing, no `<base>`, no form posts.
 */
export const WEB_UI_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'none'",
].join('; ');

/** Headers sent with every file of the web UI, besides the content type and caching ones. */
export const WEB_UI_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': WEB_UI_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** Options of {@link installWebUi}. */
export interface WebUiOptions {
  /** Full path of the page, host and module prefixes included (`/ui`, `/llm/ui`). */
  path: string;
  /** Folder of the built files (index.html, assets/); default {@link WEB_UI_ROOT}. */
  root?: string;
}

/**
 * Serves the built web UI (docs/ui.md) on a Fastify instance: `GET <path>` redirects to `<path>/` (the page's assets
 * and API calls are relative to it), `GET <path>/` answers index.html (never cached), `GET <path>/assets/*` the
 * hashed bundles (cached for a year, immutable) through @fastify/static. Every answer carries {@link WEB_UI_HEADERS}
 * (a strict CSP). The routes are plain Fastify routes: the Origin/Host request gate (an `onRequest` hook on every
 * route of the daemon) judges them like the API; they need no API key (the page holds no data and asks for a key
 * itself, docs/security.md "Web UI"). When the UI was not built (a `tsc`-only build), the page answers 404 with a
 * hint instead of failing the daemon. Call before the instance is ready.
 */
export function installWebUi(fastify: FastifyInstance, options: WebUiOptions): void {
  const root = options.root ?? WEB_UI_ROOT;
  const path = options.path.replace(/\/+$/, '');
  const indexFile = join(root, 'index.html');
  // Read once, when the routes are installed (start-up): no file-system call on the request path.
  const index: Buffer | undefined = existsSync(indexFile) ? readFileSync(indexFile) : undefined;
  const page = (request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const [pathname, query] = splitQuery(request.url);
    if (!pathname.endsWith('/')) return reply.redirect(`${pathname}/${query}`, 308);
    if (index === undefined) {
      return reply
        .code(404)
        .type('text/plain; charset=utf-8')
        .send('the web UI is not built: run "npm run build" (LLAMAD_UI=0 turns it off)');
    }
    return reply
      .headers({ ...WEB_UI_HEADERS, 'cache-control': 'no-cache' })
      .type('text/html; charset=utf-8')
      .send(index);
  };
  // With ignoreTrailingSlash (the daemon's setting) `<path>` also answers `<path>/`; otherwise both are routes.
  fastify.get(path, page);
  if (!fastify.initialConfig.ignoreTrailingSlash) fastify.get(`${path}/`, page);
  const assets = join(root, 'assets');
  if (!existsSync(assets)) return;
  void fastify.register(fastifyStatic, {
    root: assets,
    prefix: `${path}/assets/`,
    decorateReply: false,
    index: false,
    dotfiles: 'deny',
    immutable: true,
    maxAge: '365d',
    setHeaders: (res) => {
      for (const [name, value] of Object.entries(WEB_UI_HEADERS)) res.setHeader(name, value);
    },
  });
}

function splitQuery(url: string): [string, string] {
  const at = url.indexOf('?');
  return at < 0 ? [url, ''] : [url.slice(0, at), url.slice(at)];
}
