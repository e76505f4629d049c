import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE, HttpAdapterHost } from '@nestjs/core';
import type { NativeBinding } from '../binding';
import { AppController } from './app.controller';
import { CommonModule } from './common/common.module';
import { CompatModule } from './compat/compat.module';
import { OllamaExceptionFilter, OllamaValidationPipe, RoutedExceptionFilter } from './common/http';
import { AnthropicExceptionFilter } from './compat/anthropic';
import { OpenAIExceptionFilter } from './compat/openai';
import { ConfigModule, DaemonConfig } from './config';
import { InferenceModule, RunnerFactory } from './inference';
import { ModelsModule } from './models';
import { NativeModule } from './native';
import { RegistryModule } from './registry';
import { SecurityModule } from './security';

/** What can be swapped when building the app (tests). */
export interface AppOptions {
  config: DaemonConfig;
  /** A binding to use instead of the compiled addon (FakeBinding in tests). */
  binding?: NativeBinding;
  /** A RunnerFactory to use instead of LlamaRunnerFactory. */
  runnerFactory?: RunnerFactory;
}

/**
 * Root module: Config and Native (global), Security (the AUTHORIZER behind a global guard), Models, Inference; the
 * global exception filter (errors raised before a controller, in the dialect of the URL; Ollama's by default) and
 * validation pipe; CompatModule (/v1, with its own controller-bound filters) shares the same InferenceModule.
 */
@Module({})
export class AppModule {
  static forRoot(options: AppOptions): DynamicModule {
    const inference = InferenceModule.forRoot(options.runnerFactory);
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(options.config),
        NativeModule.forRoot(options.binding),
        CommonModule,
        SecurityModule,
        ModelsModule,
        inference,
        RegistryModule,
        CompatModule.forRoot(inference),
      ],
      controllers: [AppController],
      providers: [
        {
          provide: APP_FILTER,
          useFactory: (adapterHost: HttpAdapterHost) =>
            new RoutedExceptionFilter(
              [
                { path: /^\/v1\/messages(?:[/?]|$)/, filter: new AnthropicExceptionFilter() },
                { path: /^\/v1(?:[/?]|$)/, filter: new OpenAIExceptionFilter() },
              ],
              new OllamaExceptionFilter(adapterHost),
            ),
          inject: [HttpAdapterHost],
        },
        { provide: APP_PIPE, useClass: OllamaValidationPipe },
      ],
    };
  }
}
