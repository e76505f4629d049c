export * from './metrics/metrics.service';
export * from './metrics/per-token-histogram';
export * from './health/health.controller';
export * from './health/readiness.service';
export * from './shutdown/graceful-shutdown.service';
export * from './shutdown/shutdown-signals';
export * from './operations.module';
