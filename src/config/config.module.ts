import { DynamicModule, Global, Module } from '@nestjs/common';
import { DaemonConfig } from './daemon-config';

/** Provides the one DaemonConfig instance to every module (global). */
@Global()
@Module({})
export class ConfigModule {
  /** @param config the configuration built by loadConfig() (or by a test). */
  static forRoot(config: DaemonConfig): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: DaemonConfig, useValue: config }], exports: [DaemonConfig] };
  }
}
