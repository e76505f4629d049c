export * from './runner';
export * from './llama.runner';
