export * from './api-version';
export * from './cache-scope-env';
export * from './config.module';
export * from './daemon-config';
export * from './paths';
export * from './watchdog-env';
export * from './host-memory';
export * from './metrics-addr-env';
