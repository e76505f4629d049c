import { LRUCache } from 'lru-cache';
import type { ChatMessage } from '../../../generation';
import { ResponseObject } from './responses.types';

/** Limits of a response store (the in-memory one and {@link RedisResponsesStore}). */
export interface ResponsesStoreOptions {
  /** Most responses kept, all principals together; the least recently used goes first. 0 keeps none. */
  maxResponses: number;
  /**
   * Most bytes kept, all principals together (each entry's size is the JSON length of its response object plus its
   * conversation: an estimate in UTF-16 units, conservative because a chain's entries share their messages); the
   * least recently used go first, an entry larger than this is not kept.
   */
  maxBytes: number;
  /** How long a response is kept after it was created, ms (a lookup does not extend it). */
  ttlMs: number;
  /** Clock in ms (tests); default performance.now. */
  now?: () => number;
}

/** Defaults: 1,000 responses, 256 MiB, one hour (DaemonConfig: LLAMAD_RESPONSES_MAX, _MAX_BYTES, _TTL). */
export const DEFAULT_RESPONSES_STORE_OPTIONS: ResponsesStoreOptions = {
  maxResponses: 1000,
  maxBytes: 256 * 1024 * 1024,
  ttlMs: 60 * 60 * 1000,
};

/**
 * Injection token of the {@link ResponsesStore} behind `/v1/responses`: {@link InMemoryResponsesStore}, or with
 * LLAMAD_REDIS_URL a RedisResponsesStore on the daemon's one Redis connection (shared by replicas); a host application
 * may provide its own (LlamadModule `providers`).
 */
export const RESPONSES_STORE = Symbol('RESPONSES_STORE');

/** What is kept per response: the object GET returns, and the conversation a continuation starts from. */
export interface StoredResponse {
  response: ResponseObject;
  /** Earlier turns + this response's input + its output as an assistant message (never its `instructions`). */
  conversation: readonly ChatMessage[];
}

/**
 * Where `/v1/responses` keeps finished responses for `previous_response_id`, `GET /v1/responses/{id}` and `DELETE`
 * (beyond Ollama, which is stateless: reference/ollama-api.md §12.6). Every entry belongs to one principal (the
 * `owner`, `Principal.id` of src/security): a lookup or delete by another principal behaves exactly as for an
 * unknown id, so tenants cannot see, continue or delete each other's responses, nor learn that an id exists.
 * Asynchronous, so that it may live outside the process ({@link RedisResponsesStore}, shared by replicas); a promise
 * that rejects (the store is unreachable) makes the request fail with 503, except a failed `save`, which ResponsesService
 * logs (the answer still goes out; continuing it then answers 404).
 */
export interface ResponsesStore {
  /** Keeps a response of `owner` (replacing one with the same id). */
  save(owner: string, id: string, value: StoredResponse): Promise<void>;
  /** The stored response of `owner`; undefined when unknown, another principal's, deleted or expired. */
  get(owner: string, id: string): Promise<StoredResponse | undefined>;
  /** Removes a response of `owner`; false when there was none (or it is another principal's, or expired). */
  delete(owner: string, id: string): Promise<boolean>;
}

/**
 * The key of one owner's response (in memory, and after the Redis store's prefix): the owner's length first, so no
 * owner and id pair can spell another's key (ids are `resp_…`).
 */
export function responseKeyOf(owner: string, id: string): string {
  return `${owner.length}:${owner}:${id}`;
}

/**
 * The default {@link ResponsesStore}: in memory, bounded by count, by bytes and by a TTL counted from creation
 * (lru-cache's `max`, `maxSize` with `sizeCalculation`, and `ttl`; a lookup makes an entry the most recently used but
 * does not extend its life). Main-thread only, no timers (expired entries are dropped lazily). A conversation shares
 * its message objects with the earlier entries of the same chain (arrays of references), so a long chain costs one
 * copy of its messages plus a pointer array per turn in memory, while the byte bound counts each entry whole.
 */
export class InMemoryResponsesStore implements ResponsesStore {
  private readonly cache?: LRUCache<string, StoredResponse>;

  /** @param options limits (missing fields take the defaults). */
  constructor(options?: Partial<ResponsesStoreOptions>) {
    const o = { ...DEFAULT_RESPONSES_STORE_OPTIONS, ...options };
    if (o.maxResponses <= 0 || o.maxBytes <= 0) return;
    this.cache = new LRUCache<string, StoredResponse>({
      max: o.maxResponses,
      maxSize: o.maxBytes,
      sizeCalculation: (value) => Math.max(1, JSON.stringify(value).length),
      ttl: Math.max(1, o.ttlMs),
      updateAgeOnGet: false,
      allowStale: false,
      // Read the clock on every check (the default caches it for 1 ms with a timer).
      ttlResolution: 0,
      ...(o.now ? { perf: { now: o.now } } : {}),
    });
  }

  /** Number of live entries (after dropping expired ones). */
  get size(): number {
    if (!this.cache) return 0;
    this.cache.purgeStale();
    return this.cache.size;
  }

  /** Total size of the live entries, in the units of `maxBytes`. */
  get bytes(): number {
    if (!this.cache) return 0;
    this.cache.purgeStale();
    return this.cache.calculatedSize;
  }

  save(owner: string, id: string, value: StoredResponse): Promise<void> {
    this.cache?.set(responseKeyOf(owner, id), value);
    return Promise.resolve();
  }

  get(owner: string, id: string): Promise<StoredResponse | undefined> {
    const entry = this.cache?.get(responseKeyOf(owner, id));
    return Promise.resolve(entry ? { response: entry.response, conversation: entry.conversation } : undefined);
  }

  delete(owner: string, id: string): Promise<boolean> {
    const key = responseKeyOf(owner, id);
    if (!this.cache?.has(key)) return Promise.resolve(false);
    return Promise.resolve(this.cache.delete(key));
  }
}
