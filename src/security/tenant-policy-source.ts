import { Injectable } from '@nestjs/common';
import type { Principal } from './authorizer';
import type { TenantPolicy } from './tenant-policy';

/** Injection token of the {@link TenantPolicySource} consulted once per request, right after the AUTHORIZER. */
export const TENANT_POLICY_SOURCE = Symbol('TENANT_POLICY_SOURCE');

/**
 * Where a principal's policy comes from (issue 33; docs/library.md "Tenant policies"). The default,
 * {@link PrincipalPolicySource}, returns the policy the authorizer attached (the keys file's entry, or a host
 * AUTHORIZER's own); a host replaces it through LlamadModule's `providers` to read tenants from its own database. It is
 * asked once per authorized request, in the `onRequest` hook before any byte of the body is read, and its answer is
 * what the request is held to: roles, model lists, limits and caps (RequestContext `policy`).
 */
export interface TenantPolicySource {
  /**
   * The policy of `principal`; undefined = an unlimited admin that sees every model (the behaviour without a policy).
   * @throws any DaemonError, rendered in the route's dialect (e.g. UnauthorizedError for a tenant that was removed).
   */
  policyFor(principal: Principal): TenantPolicy | undefined | Promise<TenantPolicy | undefined>;
}

/** The default {@link TenantPolicySource}: the principal's own `policy` (from the keys file or the host's AUTHORIZER). */
@Injectable()
export class PrincipalPolicySource implements TenantPolicySource {
  policyFor(principal: Principal): TenantPolicy | undefined {
    return principal.policy;
  }
}
