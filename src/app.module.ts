import { DynamicModule, Module, Provider } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, HttpAdapterHost } from '@nestjs/core';
import type { NativeBinding } from '../binding';
import { OllamaExceptionFilter, RoutedExceptionFilter } from './common/http';
import { AnthropicExceptionFilter } from './api/anthropic';
import { OpenAIExceptionFilter } from './api/openai';
import { DaemonConfig } from './config';
import { RUNNER_FACTORY, RunnerFactory } from './runner';
import { LlamadModule } from './llamad.module';
import { NATIVE_BINDING, NativeBindingLoader } from './native/native.tokens';
import { AuthorizationGuard } from './security/authorization.guard';

/** What can be swapped when building the app (tests). */
export interface AppOptions {
  config: DaemonConfig;
  /** A binding to use instead of the compiled addon (FakeBinding in tests). */
  binding?: NativeBinding;
  /** A RunnerFactory to use instead of LlamaRunnerFactory. */
  runnerFactory?: RunnerFactory;
}

/**
 * The daemon: LlamadModule with every surface at the root (no prefix; the request gate and the JSON body parser are
 * installed on every route by createApp) plus the daemon-only global parts: the exception filter for errors raised
 * before any controller (the body parser's 400/413, unknown routes: gin's 404/405), in the dialect of the URL
 * (Ollama's by default), and the authorization guard for daemon routes outside the module (the module's own
 * controllers carry it already; a request is authorized once).
 */
@Module({})
export class AppModule {
  static forRoot(options: AppOptions): DynamicModule {
    const seams: Provider[] = [];
    if (options.binding) {
      const binding = options.binding;
      const loader: NativeBindingLoader = () => binding;
      seams.push({ provide: NATIVE_BINDING, useValue: loader });
    }
    if (options.runnerFactory) seams.push({ provide: RUNNER_FACTORY, useValue: options.runnerFactory });
    return {
      module: AppModule,
      imports: [
        LlamadModule.forRoot({
          config: options.config,
          requestGate: false,
          ui: options.config.ui,
          providers: seams,
        }),
      ],
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
        { provide: APP_GUARD, useClass: AuthorizationGuard },
      ],
    };
  }
}
