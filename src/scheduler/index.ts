export * from './scheduler.service';
export * from './scheduler.types';
export * from './scheduler.stats';
export * from './memory.estimator';
export * from './leased-job';
export * from './ram-cache-budget';
export * from './fair-queue';
export * from './load-events';
