import { CanActivate, ExecutionContext, Inject, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { AUTHORIZER, RequestAuthorizer } from './authorizer';

const PUBLIC_ROUTE = 'llamad:public-route';

/**
 * Marks a handler (or a whole controller) as open without authorization: `GET|HEAD /`, `/api/version` and health
 * probes, which load balancers and clients call before they have a key.
 */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(PUBLIC_ROUTE, true);

/** Requests already authorized (the daemon runs the guard both globally and on the module's controllers). */
const authorized = new WeakSet<object>();

/**
 * Runs the {@link AUTHORIZER} before every handler that is not {@link Public}. Bound to each of the module's
 * controllers (`LlamadRoutes`, so a host application's routes are not touched) and, in the daemon only, also
 * registered as a global guard so that a daemon route outside the module is covered without wiring; a request is
 * authorized once even when both run. Its errors are rendered by the route's own dialect filter (Ollama, OpenAI or
 * Anthropic shape). Runs after the request gate (Origin/Host) and before validation and the handler, so a refused
 * request has no side effect.
 */
@Injectable()
export class AuthorizationGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(AUTHORIZER) private readonly authorizer: RequestAuthorizer,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const isPublic = this.reflector.getAllAndOverride<boolean | undefined>(PUBLIC_ROUTE, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (isPublic) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    if (authorized.has(request)) return true;
    await this.authorizer.authorize({
      method: request.method,
      route: request.routeOptions.url ?? request.url.split('?')[0],
      headers: request.headers,
      remoteAddress: request.socket.remoteAddress,
    });
    authorized.add(request);
    return true;
  }
}
