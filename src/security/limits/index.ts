export * from './flexible-rate-limit-store';
export * from './rate-limit-store';
export * from './redis-client';
export * from './request-admission';
export * from './tenant-limiter';
export * from './token-budget';
