export * from './compat.module';
