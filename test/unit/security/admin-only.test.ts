import 'reflect-metadata';
import { FASTIFY_ROUTE_CONFIG_METADATA } from '@nestjs/platform-fastify/constants';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ModelsController, RegistryController, BlobsController } from '../../../src/api/ollama';
import { ForbiddenError } from '../../../src/common/errors';
import { RequestContext } from '../../../src/observability/request-context';
import { MetricsController } from '../../../src/operations/metrics/metrics.controller';
import { ADMIN_ONLY_ROUTE, requireAdmin } from '../../../src/security';
import type { TenantPolicy } from '../../../src/security';

function contextWith(policy: TenantPolicy | undefined): RequestContext {
  const context = new RequestContext('r1', 'GET', '/api/usage');
  context.policy = policy;
  return context;
}

/** Whether a handler carries the mark both readers see: Nest metadata and the Fastify route config. */
function adminOnly(handler: unknown): boolean {
  const nest = Reflect.getMetadata(ADMIN_ONLY_ROUTE, handler as object) === true;
  const config = Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, handler as object) as
    | { llamadAdminOnly?: boolean; llamadRoute?: boolean }
    | undefined;
  assert.equal(nest, config?.llamadAdminOnly === true, 'one mark, two readers');
  return nest;
}

describe('admin-only work (issue 33 roles)', () => {
  it('requireAdmin refuses a `user` (403, refusal recorded) and passes admins, no policy and no context', () => {
    const user = contextWith({ name: 't', role: 'user' });
    assert.throws(() => requireAdmin(user), ForbiddenError);
    assert.equal(user.refusal, 'forbidden');
    for (const policy of [undefined, {}, { role: 'admin' as const }]) {
      const context = contextWith(policy);
      requireAdmin(context);
      assert.equal(context.refusal, undefined);
    }
    requireAdmin(undefined);
  });

  it('marks model management, blob uploads and metrics, and nothing a user needs', () => {
    const marked = [
      ModelsController.prototype.create,
      ModelsController.prototype.copy,
      ModelsController.prototype.delete,
      RegistryController.prototype.pull,
      RegistryController.prototype.push,
      BlobsController.prototype.upload,
      MetricsController.prototype.scrape,
    ];
    for (const handler of marked) assert.ok(adminOnly(handler), handler.name);
    const open = [ModelsController.prototype.tags, ModelsController.prototype.show, BlobsController.prototype.head];
    for (const handler of open) assert.ok(!adminOnly(handler), handler.name);
    const config = Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, ModelsController.prototype.create) as {
      llamadRoute?: boolean;
    };
    assert.equal(config.llamadRoute, true, 'the controller’s own marks are kept');
  });
});
