/**
 * Registry failure texts (reference/ollama-api.md §5.2, §6.1, §6.3): what failed, where, and why — never the
 * registry's raw body, never fetch's bare `fetch failed`.
 *
 * Network failures read like Go's `*url.Error` that Ollama prints:
 * `pull model manifest: Get "http://127.0.0.1:5000/v2/library/x/manifests/latest": dial tcp 127.0.0.1:5000: connect: connection refused`.
 * Unexpected statuses: `<operation>: <status> <reason>` plus the registry's Docker-distribution error
 * (`{"errors":[{"code","message"}]}`) when it sent one: `push model manifest: 400 Bad Request: MANIFEST_INVALID:
 * manifest invalid`.
 */
import { STATUS_CODES } from 'node:http';
import { DaemonError, RegistryError } from '../common/errors';
import { errnoText, redactServerPaths } from '../common/http/safe-error-message';

/** Longest registry-supplied detail (`<code>: <message>`…) kept in an error message. */
export const MAX_REGISTRY_DETAIL = 200;

/** The request a failure belongs to (method and URL; the operation is derived from them when not given). */
export interface RegistryTarget {
  method: string;
  url: string | URL;
  /** What was being done, e.g. `pull model manifest`; default {@link registryOperation}. */
  operation?: string;
}

const SHORT_DIGEST = /sha256[:-]([0-9a-f]{12})/i;

/**
 * What a registry request does, from its method and URL (§6.1): `pull model manifest` (GET/HEAD
 * `/v2/…/manifests/<tag>`, Ollama's own wording), `push model manifest` (PUT manifest), `pull layer <short id>` (GET
 * blob), `push layer <short id>` (HEAD blob, uploads), `get authorization token` (anything else, i.e. the token realm).
 */
export function registryOperation(method: string, url: string | URL): string {
  let path = '';
  let digest: string | null = null;
  try {
    const u = new URL(url);
    path = u.pathname;
    digest = u.searchParams.get('digest');
  } catch {
    path = String(url);
  }
  const m = method.toUpperCase();
  if (/\/v2\/.+\/manifests\/[^/]+$/.test(path)) return m === 'PUT' ? 'push model manifest' : 'pull model manifest';
  const short = SHORT_DIGEST.exec(digest ?? path)?.[1];
  const layer = short ? ` ${short}` : '';
  if (/\/v2\/.+\/blobs\/uploads(\/|$)/.test(path)) return `push layer${layer}`;
  if (/\/v2\/.+\/blobs\/[^/]+$/.test(path)) return m === 'GET' ? `pull layer${layer}` : `push layer${layer}`;
  return 'get authorization token';
}

/** Node/undici error codes that mean the network (not the disk) failed. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EPROTO',
]);

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The error that says why: fetch's `cause` (first of an AggregateError), else the error itself. */
function rootCause(err: unknown): unknown {
  let current = err;
  for (let depth = 0; depth < 4; depth++) {
    const cause = (current as { cause?: unknown } | null)?.cause;
    if (cause === undefined || cause === null) break;
    current = cause;
  }
  const inner = (current as { errors?: unknown } | null)?.errors;
  if (!codeOf(current) && Array.isArray(inner) && inner.length > 0) return inner[0];
  return current;
}

function isTlsCode(code: string): boolean {
  return /^(ERR_SSL_|ERR_TLS_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_)/.test(code);
}

/**
 * Whether `err` is a failure of the connection rather than of the disk or the daemon: fetch's `TypeError: fetch
 * failed` / `terminated` (a body cut mid-way), an undici `UND_ERR_*` error, a TLS failure, or a system error with a
 * network errno (`ECONNREFUSED`, `ECONNRESET`, `ENOTFOUND`…). Aborts and DaemonErrors are not.
 */
export function isNetworkFailure(err: unknown): boolean {
  if (!(err instanceof Error) || err instanceof DaemonError || err.name === 'AbortError') return false;
  if (err instanceof TypeError && (err.message === 'fetch failed' || err.message === 'terminated')) return true;
  const code = codeOf(err);
  return code !== undefined && (code.startsWith('UND_ERR_') || NETWORK_CODES.has(code) || isTlsCode(code));
}

/** `host:port` of a URL, with the scheme's default port (Go's dial address). */
function dialAddress(url: URL): string {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return `${url.hostname}:${port}`;
}

/** A registry-supplied or library text made safe to show: one line, no server paths, at most `max` characters. */
function clip(text: string, max = MAX_REGISTRY_DETAIL): string {
  const line = redactServerPaths(
    text
      .replace(/[\u0000-\u001f\u007f]+/g, ' ')
      .replace(/\s+/g, ' ')
      .trim(),
  );
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * Why a connection failed, in Go's net/http wording where there is one (the part after `Get "<url>": `):
 * - `ENOTFOUND` → `dial tcp: lookup <host>: no such host`; `EAI_AGAIN` → `dial tcp: lookup <host>: temporary failure
 *   in name resolution`;
 * - `ECONNREFUSED` → `dial tcp <host:port>: connect: connection refused`; `EHOSTUNREACH`/`ENETUNREACH` likewise;
 * - `ECONNRESET` → `read tcp <host:port>: connection reset by peer`; undici's `other side closed` →
 *   `read tcp <host:port>: EOF (connection closed by the server)`;
 * - `ETIMEDOUT`, `UND_ERR_CONNECT_TIMEOUT` → `dial tcp <host:port>: i/o timeout`; header/body timeouts →
 *   `<host:port>: timeout awaiting response headers` / `… reading the response body`;
 * - TLS: `CERT_HAS_EXPIRED` → `tls: failed to verify certificate: x509: certificate has expired or is not yet
 *   valid`; self-signed / unknown issuer (`DEPTH_ZERO_SELF_SIGNED_CERT`, `SELF_SIGNED_CERT_IN_CHAIN`,
 *   `UNABLE_TO_VERIFY_LEAF_SIGNATURE`, `UNABLE_TO_GET_ISSUER_CERT_LOCALLY`) → `… x509: certificate signed by unknown
 *   authority`; `ERR_TLS_CERT_ALTNAME_INVALID` → `… x509: certificate is not valid for <host>`; a plain-HTTP server
 *   on an https URL → `tls: first record does not look like a TLS handshake`; other TLS codes → `tls: <code>`;
 * - fetch's blocked ports → `dial tcp <host:port>: port blocked by fetch (bad port)`;
 * - anything else → `<host:port>: <cause message>` (one line, no paths, ≤200 characters).
 */
export function describeNetworkFailure(err: unknown, url: URL): string {
  const cause = rootCause(err);
  const code = codeOf(cause) ?? codeOf(err) ?? '';
  const c = (cause ?? {}) as { address?: unknown; port?: unknown; hostname?: unknown; message?: unknown };
  const host = typeof c.hostname === 'string' && c.hostname !== '' ? c.hostname : url.hostname;
  const addr =
    typeof c.address === 'string' && typeof c.port === 'number'
      ? `${c.address.includes(':') ? `[${c.address}]` : c.address}:${c.port}`
      : dialAddress(url);
  const message = typeof c.message === 'string' ? c.message : '';
  switch (code) {
    case 'ENOTFOUND':
    case 'EAI_FAIL':
      return `dial tcp: lookup ${host}: no such host`;
    case 'EAI_AGAIN':
      return `dial tcp: lookup ${host}: temporary failure in name resolution`;
    case 'ECONNREFUSED':
    case 'EHOSTUNREACH':
    case 'EHOSTDOWN':
    case 'ENETUNREACH':
    case 'ENETDOWN':
      return `dial tcp ${addr}: connect: ${errnoText(code)}`;
    case 'ECONNRESET':
      return `read tcp ${addr}: connection reset by peer`;
    case 'ECONNABORTED':
    case 'EPIPE':
      return `write tcp ${addr}: ${errnoText(code)}`;
    case 'UND_ERR_SOCKET':
    case 'UND_ERR_CLOSED':
      return `read tcp ${addr}: EOF (connection closed by the server)`;
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return `dial tcp ${addr}: i/o timeout`;
    case 'UND_ERR_HEADERS_TIMEOUT':
      return `${addr}: timeout awaiting response headers`;
    case 'UND_ERR_BODY_TIMEOUT':
      return `${addr}: timeout reading the response body`;
    case 'CERT_HAS_EXPIRED':
    case 'CERT_NOT_YET_VALID':
      return 'tls: failed to verify certificate: x509: certificate has expired or is not yet valid';
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'UNABLE_TO_GET_ISSUER_CERT':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
      return 'tls: failed to verify certificate: x509: certificate signed by unknown authority';
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return `tls: failed to verify certificate: x509: certificate is not valid for ${url.hostname}`;
    case 'ERR_SSL_WRONG_VERSION_NUMBER':
    case 'ERR_SSL_PACKET_LENGTH_TOO_LONG':
    case 'ERR_SSL_HTTP_REQUEST':
    case 'EPROTO':
      return 'tls: first record does not look like a TLS handshake';
  }
  if (isTlsCode(code)) return `tls: ${code.toLowerCase().replace(/_/g, ' ')}`;
  if (message === 'bad port') return `dial tcp ${addr}: port blocked by fetch (bad port)`;
  if (/^E[A-Z0-9_]+$/.test(code)) return `${addr}: ${errnoText(code)}`;
  return `${addr}: ${clip(message || (err instanceof Error ? err.message : String(err)) || 'connection failed')}`;
}

/** Go's `*url.Error` operation: the method with only its first letter upper-case (`Get`, `Head`, `Put`…). */
function goMethod(method: string): string {
  return method.charAt(0).toUpperCase() + method.slice(1).toLowerCase();
}

/**
 * Turns a failed registry request into a RegistryError (no `upstreamStatus`, so blob downloads retry it):
 * `<operation>: <Method> "<url without query>": <describeNetworkFailure>`, e.g. `pull model manifest: Get
 * "http://127.0.0.1:5000/v2/library/x/manifests/latest": dial tcp 127.0.0.1:5000: connect: connection refused`.
 * The query string is left out (upload locations carry session state). Anything that is not a network failure
 * (aborts, DaemonErrors, file errors) is returned unchanged.
 * @returns the error to throw.
 */
export function registryNetworkError(err: unknown, target: RegistryTarget): unknown {
  if (!isNetworkFailure(err)) return err;
  let url: URL;
  try {
    url = new URL(target.url);
  } catch {
    return new RegistryError(`${target.operation ?? 'registry request'}: ${clip(String(target.url))}`, undefined, {
      cause: err,
    });
  }
  const operation = target.operation ?? registryOperation(target.method, url);
  const shown = `${url.origin}${url.pathname}`;
  const detail = describeNetworkFailure(err, url);
  return new RegistryError(`${operation}: ${goMethod(target.method)} "${shown}": ${detail}`, undefined, { cause: err });
}

/** `errors[].code/message` of a Docker distribution error body, or a top-level `error`/`message` string. */
function registryErrorDetail(body: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { errors, error, message } = parsed as { errors?: unknown; error?: unknown; message?: unknown };
  if (Array.isArray(errors)) {
    const parts = errors
      .filter((e): e is { code?: unknown; message?: unknown } => typeof e === 'object' && e !== null)
      .map((e) => {
        const code = typeof e.code === 'string' ? e.code : '';
        const text = typeof e.message === 'string' ? e.message : '';
        return code && text ? `${code}: ${text}` : code || text;
      })
      .filter(Boolean);
    return parts.length > 0 ? parts.join('; ') : undefined;
  }
  if (typeof error === 'string' && error !== '') return error;
  if (typeof error === 'object' && error !== null) {
    const nested = (error as { message?: unknown }).message;
    if (typeof nested === 'string' && nested !== '') return nested;
  }
  return typeof message === 'string' && message !== '' ? message : undefined;
}

/**
 * Turns an unexpected registry status into a RegistryError carrying `upstreamStatus` (§6.1, Ollama's `<status>:
 * <body>`, made safe): `<operation>: <status> <reason>` — the reason is Node's standard text for the status, not the
 * server's — followed by `: <code>: <message>` of the registry's JSON error body when it sent one (Docker
 * distribution `{"errors":[{"code","message","detail"}]}`, several joined by `; `; also `{"error": "…"}`), cut to
 * {@link MAX_REGISTRY_DETAIL} characters. Any other body (an HTML error page, plain text) is never shown. Consumes
 * the body (at most 64 KiB of it is read).
 * @param operation what was being done; default from the request (registryOperation of the response's URL; the
 *   method is taken to be GET).
 */
export async function registryStatusError(res: Response, operation?: string, method = 'GET'): Promise<RegistryError> {
  const body = await readSome(res, 64 * 1024);
  const reason = STATUS_CODES[res.status];
  const statusLine = reason ? `${res.status} ${reason}` : String(res.status);
  const detail = registryErrorDetail(body);
  const op = operation ?? registryOperation(method, res.url || 'http://registry.invalid/');
  return new RegistryError(`${op}: ${statusLine}${detail ? `: ${clip(detail)}` : ''}`, res.status);
}

/** The first `limit` bytes of a body as UTF-8 text; the rest is cancelled. Never throws. */
async function readSome(res: Response, limit: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } catch {
    // A body cut mid-way: what arrived is enough for an error message.
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}
