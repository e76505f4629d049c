export * from './generation-hooks';
export * from './generation-hooks.module';
export * from './request-context';
export * from './http-observation';
export * from './logging';
export * from './request-hooks.token';
export * from './model-events';
export * from './tracing';
