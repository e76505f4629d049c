export * from './runner';
export * from './llama.runner';
export * from './process';
