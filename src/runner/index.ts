export * from './runner';
export * from './cpu-threads';
export * from './llama.runner';
export * from './process';
export * from './grammar-worker';
