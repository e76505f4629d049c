import { Module } from '@nestjs/common';
import { GenerationHooksRegistry } from './generation-hooks';

/**
 * Provides the application's one {@link GenerationHooksRegistry}. Static, so every module that imports it (the
 * inference module that emits, the observability module and the library's REQUEST_HOOKS that register) shares the
 * same instance within an application, and two applications in one process each get their own.
 */
@Module({ providers: [GenerationHooksRegistry], exports: [GenerationHooksRegistry] })
export class GenerationHooksModule {}
