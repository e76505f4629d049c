export * from './fastify-tracing';
export * from './gen-ai-attributes';
export * from './generation-trace';
export * from './tracing-sdk';
export * from './runner-report';
