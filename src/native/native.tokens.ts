import type { NativeBinding } from '../../binding';

/**
 * DI token of the native binding loader. The value is a function so that a daemon without a built addon still
 * starts (tags/show/create work) and only inference fails, with the loader's "how to build it" message.
 */
export const NATIVE_BINDING = Symbol('NATIVE_BINDING');

/** Returns the raw addon (binding.d.ts); throws when it cannot be loaded. Tests provide a FakeBinding instead. */
export type NativeBindingLoader = () => NativeBinding;
