export * from './anthropic.controller';
export * from './anthropic-messages.service';
export * from './anthropic-error';
export * from './anthropic-request.mapper';
export * from './anthropic-response.mapper';
export * from './anthropic-stream.converter';
export * from './anthropic.types';
