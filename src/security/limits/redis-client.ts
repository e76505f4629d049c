import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import type { Redis } from 'ioredis';

/**
 * Injection token of the daemon's one Redis/Valkey connection (an ioredis `Redis`, or null without LLAMAD_REDIS_URL):
 * the tenant limits count there (FlexibleRateLimitStore), and whatever else replicas must share may use the same
 * connection. A host may provide its own client under this token (it then closes it itself).
 */
export const REDIS_CLIENT = Symbol('REDIS_CLIENT');

/** How long module start-up waits for the first connection, ms (then it goes on; limits count in memory meanwhile). */
export const CONNECT_WAIT_MS = 2000;

/** Clients made by {@link createRedisClient}: the only ones {@link RedisClientCloser} closes. */
const ownClients = new WeakSet<Redis>();

/**
 * A client for LLAMAD_REDIS_URL (`redis://` or `rediss://`, validated by loadConfig). Lazy: it connects on the first
 * command or `connect()`, never at construction, and reconnects by itself (ioredis' backoff). A command waits at
 * most one retry of a lost connection (`maxRetriesPerRequest: 1`) and 5 s (`commandTimeout`). Logs one warning
 * when the connection is lost or cannot be made, and one line when it is back (not one per retry). ioredis is
 * loaded here, on first use (about 0.1 s of start-up that a daemon without LLAMAD_REDIS_URL does not pay).
 * @param logger where the outage lines go (default Nest's `Redis` logger).
 */
export async function createRedisClient(
  url: string,
  logger: Pick<Logger, 'warn' | 'log'> = new Logger('Redis'),
): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, commandTimeout: 5000 });
  const where = redactedUrl(url);
  let down = false;
  client.on('error', (err: Error) => {
    if (down) return;
    down = true;
    logger.warn(`Redis at ${where} is unavailable (${err.message}); retrying`);
  });
  client.on('ready', () => {
    if (!down) return;
    down = false;
    logger.log(`Redis at ${where} is available again`);
  });
  ownClients.add(client);
  return client;
}

/** The URL without its password (for log lines). */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return 'LLAMAD_REDIS_URL';
  }
}

/**
 * Starts the connection of a client made by {@link createRedisClient} when the module starts (waiting for it at most
 * {@link CONNECT_WAIT_MS}: an unreachable server is the outage case, logged once) and closes it when the module is
 * destroyed. A host's own client is left alone.
 */
@Injectable()
export class RedisClientCloser implements OnModuleInit, OnModuleDestroy {
  constructor(@Optional() @Inject(REDIS_CLIENT) private readonly client?: Redis | null) {}

  async onModuleInit(): Promise<void> {
    const client = this.client;
    if (!client || !ownClients.has(client) || client.status !== 'wait') return;
    // A failed first connect is the 'error' event's (one warning); ioredis keeps retrying. Start-up waits for the
    // connection a little, so the first requests are counted in Redis, but never long for an unreachable server.
    const connected = client.connect().catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([connected, new Promise((r) => (timer = setTimeout(r, CONNECT_WAIT_MS)))]);
    clearTimeout(timer);
  }

  async onModuleDestroy(): Promise<void> {
    const client = this.client;
    if (!client || !ownClients.has(client) || client.status === 'end') return;
    // Not connected (an outage, or never used): nothing to flush, and QUIT would wait for a reconnect.
    if (client.status !== 'ready') {
      client.disconnect();
      return;
    }
    try {
      await client.quit();
    } catch {
      client.disconnect();
    }
  }
}
