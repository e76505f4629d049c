import type { RequestHooks } from './generation-hooks';

/**
 * DI token of the host application's {@link RequestHooks} (one object or an array): LlamadModule registers them in
 * its GenerationHooksRegistry when the module starts and removes them when it stops. Default: none (`[]`). Provide it
 * in `LlamadModule.forRoot({ providers: [...] })`.
 */
export const REQUEST_HOOKS = Symbol('REQUEST_HOOKS');

/** What REQUEST_HOOKS may hold. */
export type RequestHooksValue = RequestHooks | readonly RequestHooks[] | null | undefined;
