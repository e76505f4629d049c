import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { UnauthorizedError } from '../common/errors';
import { DaemonConfig } from '../config';
import { ApiKeySource, presentedKeys } from './api-keys';

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
 * Decides whether a request may reach its handler. The default is {@link ApiKeyAuthorizer}; an application that
 * embeds the service replaces it by providing its own class under {@link AUTHORIZER}.
 */
export interface RequestAuthorizer {
  /**
   * Resolves when the request may proceed.
   * @throws UnauthorizedError (401 in every dialect) or any other DaemonError (rendered by the route's dialect).
   */
  authorize(request: AuthorizationRequest): Promise<void>;
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

  /** Whether keys are required (for the start-up log line). */
  get enabled(): boolean {
    return this.keys.enabled;
  }

  /** @throws UnauthorizedError when keys are configured and none of the presented ones matches. */
  async authorize(request: AuthorizationRequest): Promise<void> {
    if (!this.keys.enabled) return;
    for (const key of presentedKeys(request.headers)) {
      if (await this.keys.matches(key)) return;
    }
    throw new UnauthorizedError();
  }

  onModuleDestroy(): void {
    process.removeListener('SIGHUP', this.onHangup);
  }
}
