import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ApiKeyAuthorizer, AUTHORIZER } from './authorizer';
import { AuthorizationGuard } from './authorization.guard';

/**
 * Request authorization: the {@link AUTHORIZER} (default {@link ApiKeyAuthorizer}) behind the global
 * {@link AuthorizationGuard}. The Origin/Host gate is installed on Fastify by `installRequestGate` (it must run
 * before routing, which a Nest guard cannot); the JSON depth limit lives in the body parser (`checkJsonDepth`).
 */
@Module({
  providers: [
    { provide: AUTHORIZER, useClass: ApiKeyAuthorizer },
    { provide: APP_GUARD, useClass: AuthorizationGuard },
  ],
  exports: [AUTHORIZER],
})
export class SecurityModule {}
