export * from './json-body.parser';
export * from './ollama-error.mapper';
export * from './ollama-exception.filter';
export * from './ollama-validation.pipe';
export * from './stream-responder';
export * from './routed-exception.filter';
export * from './safe-error-message';
export * from './llamad-routes.decorator';
