export * from './api-keys';
export * from './authorization.guard';
export * from './authorizer';
export * from './host-policy';
export * from './json-depth';
export * from './origin-policy';
export * from './request-gate';
export * from './security.module';
