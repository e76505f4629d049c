import { Controller, Get } from '@nestjs/common';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { AUTHORIZER, AuthorizationRequest, Principal, RequestAuthorizer, UnauthorizedError } from '../../src';
import { FakeBinding } from '../utils/fake-binding';
import { postJson } from '../utils/ndjson';
import { FakeHost, startFakeHost } from '../utils/tenant-host';

/** The host's own route under /api: the module's gate must leave it to the host. */
@Controller('api')
class HostApiController {
  @Get('host-thing')
  thing(): { host: boolean } {
    return { host: true };
  }
}

/** A host authorizer naming tenants (consulted at onRequest, before the body is read). */
class TenantAuthorizer implements RequestAuthorizer {
  authorize(request: AuthorizationRequest): Promise<Principal> {
    const tenant = request.headers['x-tenant'];
    if (tenant !== 'acme' && tenant !== 'globex') return Promise.reject(new UnauthorizedError());
    return Promise.resolve({ id: `tenant:${tenant}` });
  }
}

function getWithOrigin(base: string, path: string): Promise<number> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname, headers: { origin: 'https://evil.example' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

// Issue 23 items 2 and 5: in a host application mounted without a prefix, the module's Origin/Host gate judges only
// the module's routes; the host's authorizer names tenants, who own their stored responses.
describe('LlamadModule without a prefix in a host application (FakeBinding)', () => {
  let base: string;
  let host: FakeHost;
  const binding = new FakeBinding();
  const headers = (tenant: string) => ({ 'content-type': 'application/json', 'x-tenant': tenant });
  // No content-type without a body: the host's JSON parser refuses an empty JSON body.
  const tenantOnly = (tenant: string) => ({ 'x-tenant': tenant });

  before(async () => {
    host = await startFakeHost({
      providers: [{ provide: AUTHORIZER, useClass: TenantAuthorizer }],
      controllers: [HostApiController],
      binding,
      createHeaders: { 'x-tenant': 'acme' },
    });
    base = host.base;
    binding.script = () => ({ pieces: ['Hi'] });
  });

  after(async () => {
    await host?.close();
  });

  it("the gate judges the module's routes, not the host's own /api route", async () => {
    assert.equal(await getWithOrigin(base, '/api/tags'), 403);
    assert.equal(await getWithOrigin(base, '/api/host-thing'), 200);
  });

  it("one tenant cannot read, continue or delete another tenant's response", async () => {
    const created = await postJson(
      `${base}/v1/responses`,
      { model: 'fake', input: 'hi' },
      { headers: headers('acme') },
    );
    assert.equal(created.status, 200, await created.clone().text());
    const { id } = (await created.json()) as { id: string };
    assert.equal((await fetch(`${base}/v1/responses/${id}`, { headers: tenantOnly('globex') })).status, 404);
    const cont = await postJson(
      `${base}/v1/responses`,
      { model: 'fake', input: 'more', previous_response_id: id },
      { headers: headers('globex') },
    );
    assert.equal(cont.status, 404);
    assert.equal(
      (await fetch(`${base}/v1/responses/${id}`, { method: 'DELETE', headers: tenantOnly('globex') })).status,
      404,
    );
    assert.equal((await fetch(`${base}/v1/responses/${id}`, { headers: tenantOnly('acme') })).status, 200);
    const unauthorized = await fetch(`${base}/v1/responses/${id}`);
    assert.equal(unauthorized.status, 401);
    assert.equal(((await unauthorized.json()) as { error: { code: string } }).error.code, 'invalid_api_key');
  });
});
