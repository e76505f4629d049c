export * from './inference.module';
export * from './generation.types';
export * from './generate.service';
export * from './chat.service';
export * from './scheduler.service';
export * from './runner/runner';
export * from './options';
export * from './embed.service';
