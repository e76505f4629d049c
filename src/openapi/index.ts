export * from './api-route.decorator';
export * from './openapi';
export * from './schemas';
