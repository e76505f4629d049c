import { DynamicModule, Module } from '@nestjs/common';
import { DaemonConfig } from './daemon-config';

/**
 * Provides a DaemonConfig to the module that imports it. Not global (a host application importing LlamadModule must
 * not see the daemon's providers); LlamadModule provides the config through its own core module instead.
 */
@Module({})
export class ConfigModule {
  /** @param config the configuration built by loadConfig() (or by a test). */
  static forRoot(config: DaemonConfig): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: DaemonConfig, useValue: config }], exports: [DaemonConfig] };
  }
}
