import { createHash } from 'node:crypto';
import type { CacheScopeMode } from '../config';
import { ANONYMOUS } from './authorizer';

/** Hex characters of the sha256 that make a cache scope key: 64 bits, no collision among any realistic key count. */
const SCOPE_KEY_HEX = 16;

/**
 * The cache scope key of a generation (binding.d.ts NativeTaskParams.cacheScope; docs/security.md "Cache scope"):
 * under `principal`, 16 hex characters of the sha256 of the principal id (`key:<12 hex>`, a host's tenant id, or
 * {@link ANONYMOUS} when there is none: a request that was never authorized, a host's own call outside HTTP), so the
 * runner never sees an id, let alone a key; under `global`, undefined (the shared scope: every generation may reuse
 * every prefix, as in Ollama).
 * @param mode the daemon's mode (config cacheScopeMode).
 * @param principalId the request's `Principal.id` (RequestContext.principal), undefined outside a request.
 */
export function cacheScopeKey(mode: CacheScopeMode, principalId: string | undefined): string | undefined {
  if (mode === 'global') return undefined;
  return createHash('sha256')
    .update(principalId ?? ANONYMOUS.id, 'utf8')
    .digest('hex')
    .slice(0, SCOPE_KEY_HEX);
}
