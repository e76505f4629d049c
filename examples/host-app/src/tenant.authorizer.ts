import { Injectable } from '@nestjs/common';
import { AuthorizationRequest, RequestAuthorizer, UnauthorizedError } from 'llamad';

/** The host's own authorization for the /llm routes: a request must name the tenant `acme`. */
@Injectable()
export class TenantAuthorizer implements RequestAuthorizer {
  async authorize(request: AuthorizationRequest): Promise<void> {
    if (request.headers['x-tenant'] !== 'acme') throw new UnauthorizedError('unauthorized: unknown tenant');
  }
}
