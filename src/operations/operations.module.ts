import { Module, Type } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { GenerationHooksModule } from '../observability';
import { HealthController } from './health/health.controller';
import { ReadinessService } from './health/readiness.service';
import { HttpObservation, installHttpObservation } from '../observability';
import { MetricsController } from './metrics/metrics.controller';
import { MetricsService } from './metrics/metrics.service';
import { MetricsListener } from './metrics/metrics-listener';
import { GracefulShutdownService } from './shutdown/graceful-shutdown.service';
import { UsageController } from './usage/usage.controller';
import { UsageService } from './usage/usage.service';
import { routeMarks } from '../security';

/**
 * The HTTP observation of the application's Fastify instance: the one createApp installed before the request gate,
 * else installed now (a host application that did not go through createApp); a detached one (never fed) on another
 * HTTP adapter.
 */
function observationFor(adapterHost: HttpAdapterHost): HttpObservation {
  const instance = adapterHost.httpAdapter?.getInstance?.() as Partial<FastifyInstance> | undefined;
  if (instance && typeof instance.addHook === 'function') {
    // In a host application: llamad's own routes only (createApp, the daemon, installed it first for every route).
    return installHttpObservation(instance as FastifyInstance, {
      only: (request) => routeMarks(request).llamadRoute === true,
    });
  }
  return new HttpObservation();
}

/**
 * The operational routes: GET /metrics (behind the API-key guard) and GET /health, GET /ready (public). Mounted by
 * LlamadModule with its other controllers (under its route prefix, behind its request gate); they need
 * {@link OperationsModule} among the mounting module's imports.
 */
export const OPERATIONS_CONTROLLERS: Type<unknown>[] = [MetricsController, HealthController];

/**
 * GET /api/usage (usage per caller, admin only): an operational route of the native surface (`/api/*`), so
 * LlamadModule mounts it with the `native` surface's controllers; it needs {@link OperationsModule} like the others.
 */
export const USAGE_CONTROLLERS: Type<unknown>[] = [UsageController];

/**
 * Operations (issue 13, docs/observability.md): the Prometheus metrics (per-application registry; with
 * LLAMAD_METRICS_ADDR also on a listener of their own, metrics-listener.ts), the readiness
 * check, graceful shutdown and the HTTP observation (request ids, request contexts, in-flight count); its routes are
 * {@link OPERATIONS_CONTROLLERS}. Not self-contained: import it as `{ module: OperationsModule, imports: [...] }`
 * with modules that export DaemonConfig, NATIVE_BINDING, USAGE_STORE and the application's SchedulerService
 * (LlamadModule passes its core and its InferenceModule instance). Shares the application's GenerationHooksRegistry (GenerationHooksModule is
 * static). Structured logging belongs to the application (src/app.factory.ts): this module installs no logger.
 */
@Module({
  imports: [GenerationHooksModule],
  providers: [
    { provide: HttpObservation, inject: [HttpAdapterHost], useFactory: observationFor },
    MetricsService,
    MetricsListener,
    UsageService,
    ReadinessService,
    GracefulShutdownService,
  ],
  exports: [
    GenerationHooksModule,
    MetricsService,
    MetricsListener,
    UsageService,
    ReadinessService,
    GracefulShutdownService,
    HttpObservation,
  ],
})
export class OperationsModule {}
