export * from './go-duration';
export * from './keep-alive';
