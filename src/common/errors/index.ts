export * from './error-code';
export * from './daemon.error';
