import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { UnauthorizedError } from '../common/errors';
import { DaemonConfig } from '../config';
import { ApiKeySource, presentedKeys } from './api-keys';
import type { TenantPolicy } from './tenant-policy';

/** Injection token of the {@link RequestAuthorizer} that every non-public route consults. */
export const AUTHORIZER = Symbol('AUTHORIZER');

/** What an authorizer sees of a request: no body (it runs before the handler), no Fastify or Nest types. */
export interface AuthorizationRequest {
  /** HTTP method, upper case. */
  method: string;
  /** The route's path pattern as registered (e.g. `/api/chat`, `/v1/models/:model`). */
  route: string;
  headers: IncomingHttpHeaders;
  /** The client's IP address as the socket reports it. */
  remoteAddress?: string;
}

/**
 * Who a request comes from, as the authorizer established it. Every stored object a client can name later (a
 * `/v1/responses` id) belongs to one principal, and only that principal can read, continue or delete it.
 */
export interface Principal {
  /**
   * A stable, non-secret id: `key:<12 hex of the key's sha256>` for the default authorizer, {@link ANONYMOUS} when no
   * keys are configured, a host's tenant or user id from its own authorizer. Never a key or a token.
   */
  readonly id: string;
  /**
   * The name usage and metrics report this principal under: the policy's `name`, a host's tenant name. Absent = the
   * policy's name, else the id. Keep it bounded (one per tenant), never a secret.
   */
  readonly name?: string;
  /**
   * What the principal may do (models, role, limits): from the keys file's entry, or a host authorizer's own. The
   * TENANT_POLICY_SOURCE may replace it. Absent = an unlimited admin.
   */
  readonly policy?: TenantPolicy;
}

/** The principal of requests when no keys are configured, on public routes, and of authorizers that name nobody. */
export const ANONYMOUS: Principal = Object.freeze({ id: 'anonymous' });

/**
 * Decides whether a request may reach its handler, and who sends it. The default is {@link ApiKeyAuthorizer}; an
 * application that embeds the service replaces it by providing its own class under {@link AUTHORIZER}. It is
 * consulted in Fastify's `onRequest` hook, before any byte of the body is read (docs/security.md).
 */
export interface RequestAuthorizer {
  /**
   * Resolves when the request may proceed, with the caller's {@link Principal}; `undefined` (an authorizer written
   * for the earlier `Promise<void>` form) counts as {@link ANONYMOUS}, so its clients share stored objects.
   * @throws UnauthorizedError (401 in every dialect) or any other DaemonError (rendered by the route's dialect).
   */
  authorize(request: AuthorizationRequest): Promise<Principal | void>;
}

/**
 * The default {@link RequestAuthorizer} (beyond Ollama, which has no server-side keys; docs/security.md): when
 * LLAMAD_API_KEYS or LLAMAD_API_KEYS_FILE is set, a request must present one of the keys as
 * `Authorization: Bearer <key>` or `x-api-key: <key>`; with neither set every request passes. SIGHUP re-reads the
 * keys file (a changed file is also picked up by itself).
 */
@Injectable()
export class ApiKeyAuthorizer implements RequestAuthorizer, OnModuleDestroy {
  private readonly keys: ApiKeySource;
  private readonly onHangup = () => this.keys.reload();

  constructor(@Inject(DaemonConfig) config: DaemonConfig) {
    this.keys = new ApiKeySource(config.apiKeys, config.apiKeysFile);
    if (config.apiKeysFile !== '') process.on('SIGHUP', this.onHangup);
  }

  /** Re-reads the keys file at the next check (SIGHUP; a no-op without a file). */
  reload(): void {
    this.keys.reload();
  }

  /** Whether keys are required (for the start-up log line). */
  get enabled(): boolean {
    return this.keys.enabled;
  }

  /**
   * @returns the matching key's principal (`key:<12 hex>`, with the `name` and policy of its keys-file entry);
   *   {@link ANONYMOUS} when no keys are configured.
   * @throws UnauthorizedError when keys are configured and none of the presented ones matches.
   */
  async authorize(request: AuthorizationRequest): Promise<Principal> {
    if (!this.keys.enabled) return ANONYMOUS;
    for (const key of presentedKeys(request.headers)) {
      const principal = await this.keys.identify(key);
      if (principal !== undefined) return principal;
    }
    throw new UnauthorizedError();
  }

  onModuleDestroy(): void {
    process.removeListener('SIGHUP', this.onHangup);
  }
}
