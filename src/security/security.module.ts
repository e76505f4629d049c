import { Module } from '@nestjs/common';
import { ApiKeyAuthorizer, AUTHORIZER } from './authorizer';
import { PrincipalPolicySource, TENANT_POLICY_SOURCE } from './tenant-policy-source';

/**
 * The default {@link AUTHORIZER} ({@link ApiKeyAuthorizer}) and TENANT_POLICY_SOURCE for standalone use; it needs a DaemonConfig from the
 * importer. LlamadModule provides AUTHORIZER through its own core module (replaceable by the host) and binds the
 * AuthorizationGuard to its controllers (`LlamadRoutes`), never globally; the daemon adds the global guard itself.
 * The Origin/Host gate is installed on Fastify by `installRequestGate` (it must run before routing, which a Nest
 * guard cannot); the JSON depth limit lives in the body parser (`checkJsonDepth`) and the validation pipe.
 */
@Module({
  providers: [
    { provide: AUTHORIZER, useClass: ApiKeyAuthorizer },
    { provide: TENANT_POLICY_SOURCE, useClass: PrincipalPolicySource },
  ],
  exports: [AUTHORIZER, TENANT_POLICY_SOURCE],
})
export class SecurityModule {}
