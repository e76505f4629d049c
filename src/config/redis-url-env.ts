import { InvalidConfigError } from '../common/errors';

/*
 * LLAMAD_REDIS_URL (issue 33 item 3; beyond Ollama): the Redis or Valkey server that replicas share. Tenant rate
 * limits and quotas are counted there instead of in memory (docs/security.md "Rate limits and quotas"); the responses
 * store of several replicas reuses the same connection setting. Parsed by loadConfig (daemon-config.ts) into
 * DaemonConfig.redisUrl.
 */

/**
 * Checks LLAMAD_REDIS_URL (already trimmed): `redis://[user:password@]host[:port][/db]` or `rediss://…` (TLS), as
 * ioredis accepts them.
 * @returns the URL as given; '' when unset (limits stay in memory).
 * @throws InvalidConfigError for anything else (not a URL, another scheme, no host, a database that is not a number),
 *   with a message that never repeats a password.
 */
export function parseRedisUrlEnv(raw: string): string {
  if (raw === '') return '';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidConfigError('LLAMAD_REDIS_URL must be a redis:// or rediss:// URL (redis://host:6379/0)');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new InvalidConfigError(`LLAMAD_REDIS_URL must use redis:// or rediss://, not ${url.protocol}//`);
  }
  if (url.hostname === '') throw new InvalidConfigError('LLAMAD_REDIS_URL names no host (redis://host:6379)');
  const db = url.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d+$/.test(db)) {
    throw new InvalidConfigError(`LLAMAD_REDIS_URL: the database must be a number (/0), not /${db}`);
  }
  return raw;
}
