import { CanActivate, ExecutionContext, Inject, Injectable, Optional, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { AUTHORIZER, RequestAuthorizer } from './authorizer';
import { authorizeRequest, isAuthorized } from './request-authorization';
import { markRoutes } from './route-marks';
import { TENANT_POLICY_SOURCE, TenantPolicySource } from './tenant-policy-source';

const PUBLIC_ROUTE = 'llamad:public-route';

/**
 * Marks a handler (or a whole controller) as open without authorization: `GET|HEAD /`, `/api/version` and health
 * probes, which load balancers and clients call before they have a key. The one mark both checks read: Nest
 * metadata for the guard, and the Fastify route config (`routeOptions.config.llamadPublic`) for the `onRequest`
 * hook, which runs before Nest knows the handler. On a class it marks every method of the prototype (the routes).
 */
export const Public = (): MethodDecorator & ClassDecorator =>
  ((target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => {
    if (descriptor !== undefined) SetMetadata(PUBLIC_ROUTE, true)(target, key!, descriptor);
    else SetMetadata(PUBLIC_ROUTE, true)(target as never);
    markRoutes({ llamadPublic: true }, target, descriptor);
    return descriptor;
  }) as MethodDecorator & ClassDecorator;

/**
 * The backstop of the `onRequest` authorization hook (src/security/request-authorization.ts): runs the
 * {@link AUTHORIZER} (then the TENANT_POLICY_SOURCE, and the `@AdminOnly()` role check) before every handler that is
 * not {@link Public} and was not authorized by the hook already (routes the hook does not judge). Bound to each of the module's controllers (`LlamadRoutes`, so a host
 * application's routes are not touched) and, in the daemon only, also registered as a global guard. Its errors are
 * rendered by the route's own dialect filter (Ollama, OpenAI or Anthropic shape).
 */
@Injectable()
export class AuthorizationGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(AUTHORIZER) private readonly authorizer: RequestAuthorizer,
    @Optional() @Inject(TENANT_POLICY_SOURCE) private readonly policies?: TenantPolicySource,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const isPublic = this.reflector.getAllAndOverride<boolean | undefined>(PUBLIC_ROUTE, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (isPublic) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    if (isAuthorized(request)) return true;
    await authorizeRequest(this.authorizer, request, this.policies);
    return true;
  }
}
