export * from './api-keys';
export * from './authorization.guard';
export * from './authorizer';
export * from './host-policy';
export * from './origin-policy';
export * from './request-gate';
export * from './security.module';
export * from './llamad-routes.decorator';
