import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import type { NativeBinding } from '../binding';
import { AppController } from './app.controller';
import { CommonModule } from './common/common.module';
import { CompatModule } from './compat/compat.module';
import { OllamaExceptionFilter, OllamaValidationPipe } from './common/http';
import { ConfigModule, DaemonConfig } from './config';
import { InferenceModule, RunnerFactory } from './inference';
import { ModelsModule } from './models';
import { NativeModule } from './native';
import { RegistryModule } from './registry';

/** What can be swapped when building the app (tests). */
export interface AppOptions {
  config: DaemonConfig;
  /** A binding to use instead of the compiled addon (FakeBinding in tests). */
  binding?: NativeBinding;
  /** A RunnerFactory to use instead of LlamaRunnerFactory. */
  runnerFactory?: RunnerFactory;
}

/**
 * Root module: Config and Native (global), Models, Inference; the global Ollama exception filter and validation
 * pipe; CompatModule (/v1, with its own controller-bound filters) shares the same InferenceModule.
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
        ModelsModule,
        inference,
        RegistryModule,
        CompatModule.forRoot(inference),
      ],
      controllers: [AppController],
      providers: [
        { provide: APP_FILTER, useClass: OllamaExceptionFilter },
        { provide: APP_PIPE, useClass: OllamaValidationPipe },
      ],
    };
  }
}
