export * from './config.module';
export * from './daemon-config';
