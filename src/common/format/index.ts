export * from './go-number';
