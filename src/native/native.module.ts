import { DynamicModule, Module } from '@nestjs/common';
import type { NativeBinding } from '../../binding';
import { loadBinding } from './load-binding';
import { NATIVE_BINDING, NativeBindingLoader } from './native.tokens';

/**
 * The only module that touches the compiled addon (ARCHITECTURE.md §4). Provides NATIVE_BINDING, a loader that
 * `require`s build/<backend>/Release/llamad.node on first use (src/native/load-binding.ts). Not global: LlamadModule
 * provides NATIVE_BINDING through its own core module; this one is for standalone use.
 */
@Module({})
export class NativeModule {
  /** @param binding a binding to use instead of the compiled addon (tests pass a FakeBinding). */
  static forRoot(binding?: NativeBinding): DynamicModule {
    const loader: NativeBindingLoader = binding ? () => binding : loadBinding;
    return {
      module: NativeModule,
      providers: [{ provide: NATIVE_BINDING, useValue: loader }],
      exports: [NATIVE_BINDING],
    };
  }
}
