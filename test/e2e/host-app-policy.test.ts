import { Injectable } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  AUTHORIZER,
  AuthorizationRequest,
  Principal,
  RequestAuthorizer,
  TENANT_POLICY_SOURCE,
  TenantPolicy,
  TenantPolicySource,
  UnauthorizedError,
} from '../../src';
import { FakeBinding } from '../utils/fake-binding';
import { postJson } from '../utils/ndjson';
import { FakeHost, startFakeHost } from '../utils/tenant-host';

/** The host's tenants, as its own database would hold them (docs/library.md "Tenant policies"). */
const TENANTS = new Map<string, TenantPolicy>([
  ['acme', { name: 'Acme', role: 'user', models: ['demo'] }],
  ['root', { name: 'Ops', role: 'admin' }],
]);

/** Names the tenant from a header; `globex` comes with its own policy (an authorizer may return one). */
class HeaderAuthorizer implements RequestAuthorizer {
  authorize(request: AuthorizationRequest): Promise<Principal> {
    const tenant = request.headers['x-tenant'];
    if (tenant === 'globex') {
      return Promise.resolve({ id: 'tenant:globex', policy: { role: 'user', models: ['other*'] } });
    }
    if (typeof tenant !== 'string' || tenant === '') return Promise.reject(new UnauthorizedError());
    return Promise.resolve({ id: `tenant:${tenant}` });
  }
}

/** Reads the policy from the host's store; a tenant it does not know keeps what the authorizer said. */
@Injectable()
class MapPolicySource implements TenantPolicySource {
  asked = 0;
  policyFor(principal: Principal): Promise<TenantPolicy | undefined> {
    this.asked++;
    return Promise.resolve(TENANTS.get(principal.id.replace(/^tenant:/, '')) ?? principal.policy);
  }
}

// Issue 33 item 6 (library API): a host's TENANT_POLICY_SOURCE and an AUTHORIZER that returns a policy.
describe('a host application’s tenant policies (TENANT_POLICY_SOURCE, AUTHORIZER policy; FakeBinding)', () => {
  let app: NestFastifyApplication;
  let base: string;
  let host: FakeHost;
  const binding = new FakeBinding();
  const as = (tenant: string) => ({ 'content-type': 'application/json', 'x-tenant': tenant });

  before(async () => {
    host = await startFakeHost({
      providers: [
        { provide: AUTHORIZER, useClass: HeaderAuthorizer },
        { provide: TENANT_POLICY_SOURCE, useClass: MapPolicySource },
      ],
      binding,
      models: ['demo', 'other-1'],
      createHeaders: { 'x-tenant': 'root' },
    });
    ({ app, base } = host);
    const gguf = host.gguf;
    const refused = await postJson(`${base}/api/create`, { model: 'x', from: gguf }, { headers: as('acme') });
    assert.equal(refused.status, 403, 'a user of the host’s store may not create');
  });

  after(async () => {
    await host?.close();
  });

  const tags = async (tenant: string) =>
    (
      (await (await fetch(`${base}/api/tags`, { headers: { 'x-tenant': tenant } })).json()) as {
        models: { name: string }[];
      }
    ).models
      .map((m) => m.name)
      .sort();

  it('the host’s source decides the model list, asked once per request', async () => {
    const source = app.get<MapPolicySource>(TENANT_POLICY_SOURCE, { strict: false });
    const before = source.asked;
    assert.deepEqual(await tags('acme'), ['demo:latest']);
    assert.equal(source.asked - before, 1);
    assert.deepEqual(await tags('root'), ['demo:latest', 'other-1:latest']);
    assert.deepEqual(await tags('initech'), ['demo:latest', 'other-1:latest'], 'no policy: every model');
    const show = await postJson(`${base}/api/show`, { model: 'other-1' }, { headers: as('acme') });
    assert.equal(show.status, 404);
    assert.deepEqual(await show.json(), { error: "model 'other-1:latest' not found" });
  });

  it('a policy the AUTHORIZER returns holds when the source passes it on', async () => {
    assert.deepEqual(await tags('globex'), ['other-1:latest']);
    const chat = await postJson(
      `${base}/v1/chat/completions`,
      { model: 'demo', messages: [{ role: 'user', content: 'hi' }] },
      { headers: as('globex') },
    );
    assert.equal(chat.status, 404);
    assert.equal(((await chat.json()) as { error: { message: string } }).error.message, "model 'demo' not found");
  });
});
