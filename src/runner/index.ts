export * from './runner';
export * from './cpu-threads';
export * from './llama.runner';
export * from './llama-runner.factory';
export * from './lora-residency';
export * from './process';
export * from './grammar-worker';
