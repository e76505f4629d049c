import type { NativeBinding } from '../../binding';
import { loadBinding } from '../../src/native/load-binding';

/**
 * The compiled addon when it is built and exposes the Model/Context classes; otherwise the reason it cannot be used
 * (tests that need it skip with that message).
 */
export function realAddon(): { binding?: NativeBinding; skip?: string } {
  try {
    const binding = loadBinding();
    if (typeof binding.Model !== 'function' || typeof binding.Context !== 'function') {
      return { skip: 'native addon is built but does not export Model/Context yet' };
    }
    return { binding };
  } catch (err) {
    return { skip: `native addon unavailable: ${(err as Error).message}` };
  }
}
