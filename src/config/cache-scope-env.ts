import { InvalidConfigError } from '../common/errors';

/*
 * LLAMAD_CACHE_SCOPE (issue 32 item 7; beyond Ollama): whether KV prefix reuse and the host-RAM prompt cache are
 * shared by every client or kept per principal. Parsed by loadConfig (daemon-config.ts) into DaemonConfig.cacheScope;
 * read through {@link cacheScopeMode}. docs/security.md "Cache scope".
 */

/** Values of LLAMAD_CACHE_SCOPE. */
export const CACHE_SCOPES = ['principal', 'global'] as const;

/**
 * One of {@link CACHE_SCOPES}: `principal` = a request reuses only the KV prefixes and kept prompt states that requests
 * of its own principal left (the prompt counts and timings of one API key then say nothing about another's prompts);
 * `global` = every request may reuse every prefix (Ollama's and llama-server's behaviour).
 */
export type CacheScopeMode = (typeof CACHE_SCOPES)[number];

/**
 * Parses LLAMAD_CACHE_SCOPE (already trimmed of whitespace and quotes), case-insensitively.
 * @returns the mode; undefined when unset (''), so that {@link cacheScopeMode} picks the default.
 * @throws InvalidConfigError for any other value (a typo must not silently share caches between tenants).
 */
export function parseCacheScopeEnv(raw: string): CacheScopeMode | undefined {
  if (raw === '') return undefined;
  const wanted = raw.toLowerCase();
  const mode = CACHE_SCOPES.find((m) => m === wanted);
  if (!mode) {
    throw new InvalidConfigError(
      `LLAMAD_CACHE_SCOPE must be ${CACHE_SCOPES.map((m) => `"${m}"`).join(' or ')}, not ${JSON.stringify(raw)}`,
    );
  }
  return mode;
}

/** The DaemonConfig fields {@link cacheScopeMode} reads (structural, so that this file does not import daemon-config). */
export interface CacheScopeSettings {
  /** LLAMAD_CACHE_SCOPE; undefined = unset. */
  cacheScope?: CacheScopeMode;
  /** LLAMAD_API_KEYS. */
  apiKeys: readonly string[];
  /** LLAMAD_API_KEYS_FILE ('' = none). */
  apiKeysFile: string;
}

/**
 * The cache scope the daemon applies: LLAMAD_CACHE_SCOPE when set, else `principal` when API keys are configured
 * (LLAMAD_API_KEYS or LLAMAD_API_KEYS_FILE: clients are told apart, so their caches are too) and `global` without
 * keys (every request is the same `anonymous` principal: nothing to separate).
 */
export function cacheScopeMode(config: CacheScopeSettings): CacheScopeMode {
  if (config.cacheScope) return config.cacheScope;
  return config.apiKeys.length > 0 || config.apiKeysFile !== '' ? 'principal' : 'global';
}
