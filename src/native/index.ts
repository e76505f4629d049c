export * from './native.module';
export * from './native.tokens';
export * from './native-errors';
export * from './load-binding';
