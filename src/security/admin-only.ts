import { SetMetadata } from '@nestjs/common';
import { ForbiddenError } from '../common/errors';
import type { RequestContext } from '../observability/request-context';
import { markRoutes } from './route-marks';
import { roleOf, TenantPolicy } from './tenant-policy';

/** Nest metadata key of {@link AdminOnly} (the Fastify route config carries `llamadAdminOnly` too). */
export const ADMIN_ONLY_ROUTE = 'llamad:admin-only-route';

/**
 * Marks a handler (or every handler of a controller) as one that only an `admin` principal may call (issue 33;
 * docs/security.md "Tenants"): creating, pulling, pushing, copying and deleting models, uploading blobs, reading usage.
 * A principal whose policy's role is `user` gets ForbiddenError (403 in the route's dialect) from the authorization
 * hook, after the AUTHORIZER and the TENANT_POLICY_SOURCE and before any byte of the body is read
 * (request-authorization.ts). A principal without a policy is an admin. Like `@Public()`, one mark with two readers:
 * the Fastify route config (`routeOptions.config.llamadAdminOnly`, read by the hook and the guard) and Nest metadata.
 */
export const AdminOnly = (): MethodDecorator & ClassDecorator =>
  ((target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => {
    if (descriptor !== undefined) SetMetadata(ADMIN_ONLY_ROUTE, true)(target, key!, descriptor);
    else SetMetadata(ADMIN_ONLY_ROUTE, true)(target as never);
    markRoutes({ llamadAdminOnly: true }, target, descriptor);
    return descriptor;
  }) as MethodDecorator & ClassDecorator;

/**
 * Refuses a `user` principal: for admin-only work decided inside a handler or service (routes use {@link AdminOnly}).
 * Records `refusal = 'forbidden'` on the context (the usage counters read it). No context (a library call) and no
 * policy pass: they are admins.
 * @throws ForbiddenError (403 in every dialect) when the context's policy has role `user`.
 */
export function requireAdmin(context: RequestContext | undefined): void {
  if (isAdmin(context?.policy)) return;
  if (context) context.refusal = 'forbidden';
  throw new ForbiddenError();
}

/** Whether a policy is an admin's (no policy, or no role, is). */
export function isAdmin(policy: TenantPolicy | undefined): boolean {
  return roleOf(policy) === 'admin';
}
