import type { Redis } from 'ioredis';
import {
  DEFAULT_RESPONSES_STORE_OPTIONS,
  responseKeyOf,
  ResponsesStore,
  ResponsesStoreOptions,
  StoredResponse,
} from './responses.store';

/** Where the Redis store's keys start unless told otherwise. */
export const DEFAULT_REDIS_RESPONSES_PREFIX = 'llamad:resp:';

/** Options of {@link RedisResponsesStore}: the limits of the in-memory store, and where its keys live. */
export interface RedisResponsesStoreOptions extends Omit<ResponsesStoreOptions, 'now'> {
  /** Prefix of every key (default `llamad:resp:`); replicas that share responses must use the same one. */
  keyPrefix: string;
}

/*
 * Keys, all under the prefix P:
 *   P e:<owner length>:<owner>:<id>   the entry, JSON of StoredResponse, expiring (PX) ttlMs after its creation
 *   P index                           sorted set: entry key → its expiry time (Unix ms, the server's clock)
 *   P sizes                           hash: entry key → its size in bytes
 *   P bytes                           the sum of `sizes`
 * The scripts keep the three bookkeeping keys consistent with each other atomically (one script at a time runs).
 */

/** Lua: forgets the bookkeeping of key `k` (not the entry itself). */
const FORGET = `
local function forget(k)
  local s = redis.call('HGET', KEYS[3], k)
  if s then
    redis.call('HDEL', KEYS[3], k)
    redis.call('DECRBY', KEYS[4], s)
  end
  redis.call('ZREM', KEYS[2], k)
end
`;

/**
 * Lua save: KEYS = entry, index, sizes, bytes; ARGV = json, ttl ms, max responses, max bytes, size. Drops the
 * bookkeeping of entries that expired, stores the entry with its expiry, then evicts the entries that expire first
 * (the oldest, for one TTL) until both bounds hold. Returns the number evicted.
 */
const SAVE_SCRIPT = `${FORGET}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
for _, k in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 1000)) do
  forget(k)
end
forget(KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('ZADD', KEYS[2], now + ttl, KEYS[1])
redis.call('HSET', KEYS[3], KEYS[1], ARGV[5])
redis.call('INCRBY', KEYS[4], ARGV[5])
local maxCount = tonumber(ARGV[3])
local maxBytes = tonumber(ARGV[4])
local evicted = 0
while redis.call('ZCARD', KEYS[2]) > maxCount or tonumber(redis.call('GET', KEYS[4]) or '0') > maxBytes do
  local first = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if not first then break end
  forget(first)
  redis.call('DEL', first)
  evicted = evicted + 1
end
return evicted
`;

/** Lua delete: KEYS = entry, index, sizes, bytes. Returns 1 when the entry existed (and is now gone), else 0. */
const DELETE_SCRIPT = `${FORGET}
forget(KEYS[1])
return redis.call('DEL', KEYS[1])
`;

/**
 * A {@link ResponsesStore} in Redis or Valkey (issue 34 item 1; beyond Ollama), so that replicas behind one balancer
 * continue each other's conversations (`previous_response_id`). It runs on the daemon's one connection (REDIS_CLIENT,
 * LLAMAD_REDIS_URL) and needs Redis 6.2 or Valkey (server-side scripts with TIME; not Redis Cluster: its keys are in
 * several slots). Its semantics are the in-memory store's where Redis allows:
 * - **Owner scoping**: the owner is part of the key, so another principal's id is a key that does not exist, exactly
 *   as an unknown id.
 * - **TTL from creation**: each entry is written with `PX ttlMs`; a lookup does not extend it.
 * - **Bounds**: an entry whose JSON is larger than `maxBytes` (UTF-8 bytes, what Redis holds) is not kept (a previous
 *   entry under the same id is removed, as lru-cache does). The total over all principals is bounded by
 *   `maxResponses` and `maxBytes` like the in-memory store's, but eviction goes by **creation order** (the entry
 *   that would expire first goes first), not by last use: a lookup stays a read, with no write per GET. The
 *   bookkeeping (a sorted set of expiry times, a hash of sizes, a byte total) changes only in atomic scripts.
 *   Should Redis itself drop an entry (its own `maxmemory` policy), the entry is unknown at once and its bookkeeping
 *   goes when its expiry time passes.
 * - `maxResponses` or `maxBytes` 0 keeps nothing (no command is sent).
 * Values are JSON; a value that does not parse reads as unknown. A command that fails (Redis down: ioredis waits one
 * reconnect, at most 5 s) rejects, and ResponsesService answers 503 for lookups and logs failed saves.
 */
export class RedisResponsesStore implements ResponsesStore {
  private readonly o: RedisResponsesStoreOptions;

  /**
   * @param redis the connection (not closed by the store: its owner closes it).
   * @param options limits and key prefix (missing fields take the in-memory store's defaults and `llamad:resp:`).
   */
  constructor(
    private readonly redis: Redis,
    options?: Partial<RedisResponsesStoreOptions>,
  ) {
    const { maxResponses, maxBytes, ttlMs } = DEFAULT_RESPONSES_STORE_OPTIONS;
    this.o = { maxResponses, maxBytes, ttlMs, keyPrefix: DEFAULT_REDIS_RESPONSES_PREFIX, ...options };
  }

  private get disabled(): boolean {
    return this.o.maxResponses <= 0 || this.o.maxBytes <= 0;
  }

  /** The entry key, index, sizes and byte total of one response (the KEYS of the scripts). */
  private keys(owner: string, id: string): string[] {
    const p = this.o.keyPrefix;
    return [`${p}e:${responseKeyOf(owner, id)}`, `${p}index`, `${p}sizes`, `${p}bytes`];
  }

  async save(owner: string, id: string, value: StoredResponse): Promise<void> {
    if (this.disabled) return;
    const json = JSON.stringify(value);
    const size = Math.max(1, Buffer.byteLength(json));
    const keys = this.keys(owner, id);
    if (size > this.o.maxBytes) {
      await this.redis.eval(DELETE_SCRIPT, keys.length, ...keys);
      return;
    }
    const ttl = Math.max(1, Math.round(this.o.ttlMs));
    await this.redis.eval(SAVE_SCRIPT, keys.length, ...keys, json, ttl, this.o.maxResponses, this.o.maxBytes, size);
  }

  async get(owner: string, id: string): Promise<StoredResponse | undefined> {
    if (this.disabled) return undefined;
    const json = await this.redis.get(this.keys(owner, id)[0]);
    if (json === null) return undefined;
    try {
      const value = JSON.parse(json) as StoredResponse;
      return { response: value.response, conversation: value.conversation };
    } catch {
      return undefined;
    }
  }

  async delete(owner: string, id: string): Promise<boolean> {
    if (this.disabled) return false;
    const keys = this.keys(owner, id);
    return (await this.redis.eval(DELETE_SCRIPT, keys.length, ...keys)) === 1;
  }

  /** Number of entries the bookkeeping counts (expired ones until the next save drops them); for tests and metrics. */
  async size(): Promise<number> {
    return this.redis.zcard(`${this.o.keyPrefix}index`);
  }

  /** Sum of the counted entries' sizes, bytes (same caveat as {@link size}). */
  async bytes(): Promise<number> {
    return Number((await this.redis.get(`${this.o.keyPrefix}bytes`)) ?? 0);
  }
}
