import { Inject, Injectable, Optional } from '@nestjs/common';
import type { ChatMessage } from '../../../generation';
import { ResponseObject } from './responses.types';

/** Limits of the in-memory response store. */
export interface ResponsesStoreOptions {
  /** Most responses kept; the least recently used goes first. 0 keeps none (every lookup is a miss). */
  maxResponses: number;
  /** How long a response is kept after it was created, ms. */
  ttlMs: number;
  /** Clock in ms (tests); default Date.now. */
  now?: () => number;
}

/** Defaults: 1,000 responses, one hour (DaemonConfig: LLAMAD_RESPONSES_MAX, LLAMAD_RESPONSES_TTL). */
export const DEFAULT_RESPONSES_STORE_OPTIONS: ResponsesStoreOptions = { maxResponses: 1000, ttlMs: 60 * 60 * 1000 };

/** Injection token of the store's options (a provider may replace the defaults, e.g. from DaemonConfig). */
export const RESPONSES_STORE_OPTIONS = Symbol('RESPONSES_STORE_OPTIONS');

/** What is kept per response: the object GET returns, and the conversation a continuation starts from. */
export interface StoredResponse {
  response: ResponseObject;
  /** Earlier turns + this response's input + its output as an assistant message (never its `instructions`). */
  conversation: readonly ChatMessage[];
}

interface Entry extends StoredResponse {
  /** Date.now() after which the entry is gone. */
  expiresAt: number;
}

/**
 * The in-memory store behind `previous_response_id`, `GET /v1/responses/{id}` and `DELETE` (beyond Ollama, which is
 * stateless: reference/ollama-api.md §12.6). Bounded by count (LRU: a lookup makes an entry the most recent) and by a
 * TTL counted from creation; expired entries are dropped lazily (on lookup and on every save). Main-thread only, no
 * timers. A conversation shares its message objects with the earlier entries of the same chain (arrays of
 * references), so a long chain costs one copy of its messages plus a pointer array per turn.
 */
@Injectable()
export class ResponsesStore {
  private readonly entries = new Map<string, Entry>();
  private readonly options: ResponsesStoreOptions;
  private readonly now: () => number;

  /** @param options limits (missing fields take the defaults). */
  constructor(@Optional() @Inject(RESPONSES_STORE_OPTIONS) options?: Partial<ResponsesStoreOptions>) {
    this.options = { ...DEFAULT_RESPONSES_STORE_OPTIONS, ...options };
    this.now = this.options.now ?? Date.now;
  }

  /** Number of live entries (after dropping expired ones). */
  get size(): number {
    this.sweep();
    return this.entries.size;
  }

  /** Keeps a response (replacing one with the same id), then evicts expired and least recently used entries. */
  save(id: string, value: StoredResponse): void {
    this.entries.delete(id);
    if (this.options.maxResponses <= 0) return;
    this.entries.set(id, { ...value, expiresAt: this.now() + this.options.ttlMs });
    this.sweep();
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.options.maxResponses) break;
      this.entries.delete(oldest);
    }
  }

  /** The stored response, made the most recently used; undefined when unknown, deleted or expired. */
  get(id: string): StoredResponse | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    this.entries.delete(id);
    if (entry.expiresAt <= this.now()) return undefined;
    this.entries.set(id, entry);
    return { response: entry.response, conversation: entry.conversation };
  }

  /** Removes a response; false when there was none (or it had expired). */
  delete(id: string): boolean {
    const entry = this.entries.get(id);
    if (!entry) return false;
    this.entries.delete(id);
    return entry.expiresAt > this.now();
  }

  private sweep(): void {
    const now = this.now();
    for (const [id, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(id);
  }
}
