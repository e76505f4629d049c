import { Injectable } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { ReadinessService } from '../health/readiness.service';
import { GracefulShutdownService } from '../shutdown/graceful-shutdown.service';

/**
 * A `@nestjs/terminus` health indicator for hosts that run Terminus (docs/library.md "Health and shutdown"): the
 * checks of llamad's GET /ready — the model store is usable, the native addon loads — and, while llamad drains for
 * shutdown, down with `reason: "draining"` so the host's readiness probe takes the instance out of rotation.
 * Import it from `llamad/terminus` (the only file of the package that needs `@nestjs/terminus`, an optional peer);
 * provide it in a module that imports both `TerminusModule` and `LlamadModule` (which exports ReadinessService and
 * GracefulShutdownService).
 */
@Injectable()
export class LlamadHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly readiness: ReadinessService,
    private readonly shutdown: GracefulShutdownService,
  ) {}

  /**
   * `{ [key]: { status: 'up' } }`, or `{ [key]: { status: 'down', reason } }` (reason: `draining`, or the readiness
   * check's, which names no server path). Never throws: Terminus turns a down result into its 503.
   * @param key the result's key in Terminus's `info`/`error` objects.
   */
  async isReady<const Key extends string = 'llamad'>(key: Key = 'llamad' as Key): Promise<HealthIndicatorResult<Key>> {
    const session = this.health.check(key);
    if (this.shutdown.isDraining()) return session.down({ reason: 'draining' });
    const readiness = await this.readiness.check();
    return readiness.ready ? session.up() : session.down({ reason: readiness.reason });
  }
}
