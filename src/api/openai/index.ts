export * from './openai.controller';
export * from './openai-error';
export * from './input-audio';
export * from './openai-request.mapper';
export * from './openai-response.mapper';
export * from './openai.types';
export * from './rerank.controller';
export * from './sse-writer';
