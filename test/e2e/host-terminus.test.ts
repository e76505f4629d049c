import { Controller, Get, Module } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GracefulShutdownService, LlamadModule, NATIVE_BINDING } from '../../src';
import { LlamadHealthIndicator } from '../../src/operations/terminus';
import { FakeBinding } from '../utils/fake-binding';
import { listenHost } from '../utils/host';

// Health and shutdown for a host that uses @nestjs/terminus (issue 24 §6): llamad's readiness as a Terminus
// indicator, down while llamad drains; the drain service injectable from the host.

@Controller('health')
class HostHealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly llamad: LlamadHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.llamad.isReady()]);
  }
}

describe('LlamadHealthIndicator in a Terminus host', () => {
  let app: NestFastifyApplication;
  let base: string;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'llamad-terminus-'));
    @Module({
      imports: [
        TerminusModule,
        LlamadModule.forRoot({
          config: { modelsDir: join(dir, 'models'), logging: false },
          prefix: '/llm',
          providers: [{ provide: NATIVE_BINDING, useValue: () => new FakeBinding() }],
        }),
      ],
      controllers: [HostHealthController],
      providers: [LlamadHealthIndicator],
    })
    class HostModule {}
    ({ app, base } = await listenHost(HostModule));
  });

  after(async () => {
    await app?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("reports llamad up in the host's own health route", async () => {
    const res = await fetch(`${base}/health`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { status: string; info: Record<string, { status: string }> };
    assert.equal(body.status, 'ok');
    assert.deepEqual(body.info.llamad, { status: 'up' });
  });

  it('reports down with reason "draining" once the host starts llamad’s drain (GracefulShutdownService)', async () => {
    const shutdown = app.get(GracefulShutdownService, { strict: false });
    assert.equal(shutdown.isDraining(), false);
    const drained = await shutdown.drain(0);
    assert.equal(drained.timedOut, false);
    const result = await app.get(LlamadHealthIndicator).isReady();
    assert.deepEqual(result, { llamad: { status: 'down', reason: 'draining' } });
  });
});
