import { RegistryError } from '../common/errors';
import { OLLAMA_API_VERSION } from '../config';
import { RegistryCredentials } from './registry-credentials';
import { parseWwwAuthenticate } from './www-authenticate';
import { buildChallengeUrl, challengeSigningString, checkRealmHost } from './registry-challenge';
import { Ed25519Identity, loadOrCreateIdentity } from './ollama-key';
import { registryNetworkError, registryStatusError, RegistryTarget } from './registry-errors';

/** Message Ollama gives when the registry still refuses after authentication (§6.2 step 6). */
export const UNAUTHORIZED_MESSAGE = 'unauthorized: access denied';

/** One registry request. Bodies are Buffers so a request can be replayed after an authentication challenge. */
export interface RegistryRequest {
  method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH';
  url: string | URL;
  headers?: Record<string, string>;
  body?: Buffer;
  signal?: AbortSignal;
  /** What the request does, for error messages (e.g. `pull model manifest`); default from method and URL. */
  operation?: string;
}

/** The request each response of RegistrySession.fetch answered, so unexpectedStatus can name the operation. */
const requestOf = new WeakMap<Response, RegistryTarget>();

/**
 * An HTTP session with one registry host for the duration of one pull or push (reference/ollama-api.md §6.1–6.2).
 * Sends `User-Agent`, remembers the `Authorization` it negotiated, and on `401`:
 * - `Bearer realm,service,scope` with Basic credentials configured for the host → `GET <realm>?service=…&scope=…`
 *   with `Authorization: Basic …` (Docker/OCI token flow);
 * - `Bearer realm,service,scope` without credentials → Ollama's key signing (§6.2 steps 2–4): `GET
 *   <realm>?nonce=…&scope=…&service=…&ts=…` (realm host must equal the request host, else `realm host "<a>" does
 *   not match original host "<b>"`), `Authorization: <base64 pubkey blob>:<base64 ed25519 signature of
 *   "GET,<url>,<base64(hex(sha256("")))>">` with the key of ollama-key.ts (generated on first use);
 * - either token flow: `{"token"}` or `{"access_token"}` → retries once with `Authorization: Bearer <token>`;
 * - `Basic` → retries once with the configured credentials.
 * A second `401`, a refused token request, or a challenge that cannot be answered, fails with
 * `unauthorized: access denied`. Credentials, tokens and signatures are never logged or put in error messages.
 */
export class RegistrySession {
  private authorization: string | undefined;
  readonly userAgent = `ollama/${OLLAMA_API_VERSION} (${process.arch === 'x64' ? 'amd64' : process.arch} ${process.platform}) llamad`;

  /**
   * @param credentials Basic credentials for this host, if any.
   * @param fetchImpl the fetch to use (tests).
   * @param identity loads the ed25519 key for the signing flow; default `loadOrCreateIdentity()` ($OLLAMA_KEY_DIR
   *   or ~/.ollama), called only when a Bearer challenge arrives without credentials.
   */
  constructor(
    private readonly credentials: RegistryCredentials | undefined,
    private readonly fetchImpl: typeof fetch = fetch,
    private readonly identity: () => Promise<Ed25519Identity> = () => loadOrCreateIdentity(),
  ) {}

  /**
   * Sends a request, answering one authentication challenge. Redirects are followed (fetch drops `Authorization`
   * on a cross-origin hop, as it should for pre-signed object-store URLs).
   * @returns the response (any status other than an unanswerable 401; the caller checks it).
   * @throws RegistryError `unauthorized: access denied` (status 401); RegistryError (no upstreamStatus) for a network
   *   failure of the request or of the token request, naming operation, URL and cause (registryNetworkError, e.g.
   *   `pull model manifest: Get "http://h:5000/v2/…": dial tcp h:5000: connect: connection refused`); aborts as
   *   thrown by fetch.
   */
  async fetch(req: RegistryRequest): Promise<Response> {
    const res = await this.authenticated(req);
    requestOf.set(res, { method: req.method, url: req.url, operation: req.operation });
    return res;
  }

  private async authenticated(req: RegistryRequest): Promise<Response> {
    const first = await this.send(req);
    if (first.status !== 401) return first;
    const challenge = parseWwwAuthenticate(first.headers.get('www-authenticate'));
    await first.body?.cancel().catch(() => undefined);
    if (challenge?.scheme === 'bearer' && challenge.params.realm) {
      const token = this.credentials
        ? await this.fetchToken(challenge.params, req.signal)
        : await this.fetchSignedToken(challenge.params, req.url, req.signal);
      this.authorization = `Bearer ${token}`;
    } else if (challenge?.scheme === 'basic' && this.credentials) {
      this.authorization = `Basic ${basic(this.credentials)}`;
    } else {
      throw new RegistryError(UNAUTHORIZED_MESSAGE, 401);
    }
    const second = await this.send(req);
    if (second.status === 401) {
      await second.body?.cancel().catch(() => undefined);
      throw new RegistryError(UNAUTHORIZED_MESSAGE, 401);
    }
    return second;
  }

  private send(req: RegistryRequest): Promise<Response> {
    const headers: Record<string, string> = { 'user-agent': this.userAgent, ...req.headers };
    if (this.authorization) headers.authorization = this.authorization;
    return this.call(req, { method: req.method, headers, body: req.body, signal: req.signal, redirect: 'follow' });
  }

  /** fetchImpl with network failures turned into RegistryErrors that say what failed (registryNetworkError). */
  private async call(target: RegistryTarget, init: RequestInit): Promise<Response> {
    try {
      return await this.fetchImpl(target.url, init);
    } catch (err) {
      throw registryNetworkError(err, target);
    }
  }

  /**
   * Ollama's key-signing token request (§6.2 steps 2–5).
   * @throws RegistryError `realm host … does not match original host …`; `unauthorized: access denied` when the
   *   token endpoint refuses or answers without a token; errors reading the key file as thrown.
   */
  private async fetchSignedToken(
    params: Record<string, string>,
    requestUrl: string | URL,
    signal?: AbortSignal,
  ): Promise<string> {
    const url = buildChallengeUrl({ realm: params.realm, service: params.service, scope: params.scope });
    checkRealmHost(url, requestUrl);
    const identity = await this.identity();
    const headers = {
      'user-agent': this.userAgent,
      authorization: identity.authorization(challengeSigningString(url)),
    };
    const target: RegistryTarget = { method: 'GET', url: url.toString(), operation: 'get authorization token' };
    return this.readToken(await this.call(target, { headers, signal }));
  }

  /** The token endpoint step (§6.2 step 2/5). Basic credentials go along when configured. */
  private async fetchToken(params: Record<string, string>, signal?: AbortSignal): Promise<string> {
    let url: URL;
    try {
      url = new URL(params.realm);
    } catch {
      throw new RegistryError(UNAUTHORIZED_MESSAGE, 401);
    }
    if (params.service) url.searchParams.set('service', params.service);
    for (const scope of (params.scope ?? '').split(' ').filter(Boolean)) url.searchParams.append('scope', scope);
    const headers: Record<string, string> = { 'user-agent': this.userAgent };
    if (this.credentials) headers.authorization = `Basic ${basic(this.credentials)}`;
    const target: RegistryTarget = { method: 'GET', url, operation: 'get authorization token' };
    return this.readToken(await this.call(target, { headers, signal }));
  }

  /** `{"token"}` or `{"access_token"}` of a token response; anything else is `unauthorized: access denied`. */
  private async readToken(res: Response): Promise<string> {
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw new RegistryError(UNAUTHORIZED_MESSAGE, 401);
    }
    const body = (await res.json().catch(() => null)) as { token?: unknown; access_token?: unknown } | null;
    const token = body?.token ?? body?.access_token;
    if (typeof token !== 'string' || token === '') throw new RegistryError(UNAUTHORIZED_MESSAGE, 401);
    return token;
  }
}

function basic(c: RegistryCredentials): string {
  return Buffer.from(`${c.username}:${c.password}`, 'utf8').toString('base64');
}

/**
 * Turns an unexpected registry status into a RegistryError with `upstreamStatus` (reference/ollama-api.md §6.1,
 * made safe by registryStatusError): `<operation>: <status> <reason>`, plus `: <code>: <message>` from the
 * registry's Docker-distribution JSON error body when it sent one (≤200 characters); never the raw body (an HTML
 * page, a proxy's text). The operation is the `operation` argument, else the one of the request this response
 * answered (RegistrySession.fetch), e.g. `pull model manifest: 500 Internal Server Error`. Consumes the body.
 */
export function unexpectedStatus(res: Response, operation?: string): Promise<RegistryError> {
  const target = requestOf.get(res);
  return registryStatusError(res, operation ?? target?.operation, target?.method ?? 'GET');
}
