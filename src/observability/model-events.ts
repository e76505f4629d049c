import type { OnApplicationShutdown } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { concat, defer, EMPTY, finalize, from, Observable, Subject, takeUntil, tap } from 'rxjs';
import { currentRequestContext } from './request-context';

/**
 * Model lifecycle events (issue 36 item 2; docs/observability.md "Model events"): what `GET /api/events` streams as
 * server-sent events. Beyond Ollama (llama-server's router streams load stages and download progress the same way).
 */

/** The event types, as the SSE `event:` field names them. */
export type ModelEventType =
  | 'load.start'
  | 'load.progress'
  | 'load.ready'
  | 'load.failed'
  | 'unload'
  | 'pull.progress'
  | 'push.progress'
  | 'create.step';

/** Why a runner left memory (`unload` events). */
export type UnloadReason = 'expired' | 'evicted' | 'requested' | 'shutdown' | 'failed';

/** What a publisher hands the bus. */
export interface ModelEventInput {
  type: ModelEventType;
  /** The model's short name as /api/ps shows it (`tiny:latest`). */
  model: string;
  /**
   * The event's own fields besides `model` and `time`, wire-named (`progress`, `duration_ns`, `error`, `reason`,
   * `status`, `digest`, `total`, `completed`).
   */
  data?: Record<string, unknown>;
  /**
   * The principal that started the work (pull, push, create): such events reach only that principal and admins.
   * Absent for events anyone who may use the model sees (loads, unloads). Never sent on the wire.
   */
  principal?: string;
}

/** One published event. */
export interface ModelEvent extends ModelEventInput {
  /** `<epoch>-<seq>`: the SSE `id:` field, for `Last-Event-ID`. */
  id: string;
  /** Increasing per process, from 1. */
  seq: number;
  /** When it was published, ms since the Unix epoch. */
  at: number;
}

/**
 * The model event bus: publishers (scheduler, registry, create) call {@link publish}; `GET /api/events` reads
 * {@link stream}. A host may provide its own behind {@link MODEL_EVENTS} (e.g. to fan events out to other systems).
 */
export interface ModelEvents {
  /** Random per process (per bus): an event id of another epoch (a restarted daemon, another replica) replays nothing. */
  readonly epoch: string;
  /** Publishes an event to every current stream and keeps it in the replay ring. Cheap; never throws. */
  publish(event: ModelEventInput): ModelEvent;
  /**
   * The events of the ring newer than `lastEventId` (only when it is of this epoch; else none), then every event
   * published from now on. Completes when the bus ends ({@link end}).
   */
  stream(lastEventId?: string): Observable<ModelEvent>;
  /** Completes every stream (graceful shutdown: open SSE responses end so they do not hold the drain). Idempotent. */
  end(): void;
}

/** DI token of the application's {@link ModelEvents}: default InMemoryModelEvents. */
export const MODEL_EVENTS = Symbol('MODEL_EVENTS');

/** Most events the replay ring keeps. */
export const MODEL_EVENTS_RING_SIZE = 256;
/** Oldest event the replay ring keeps, ms. */
export const MODEL_EVENTS_RING_AGE_MS = 60_000;

/** Parses an event id `<epoch>-<seq>`; undefined when it is not one. */
export function parseEventId(id: string | undefined): { epoch: string; seq: number } | undefined {
  if (id === undefined) return undefined;
  const dash = id.lastIndexOf('-');
  if (dash <= 0) return undefined;
  const seq = Number(id.slice(dash + 1));
  if (!Number.isSafeInteger(seq) || seq < 0) return undefined;
  return { epoch: id.slice(0, dash), seq };
}

/**
 * The default {@link ModelEvents}: in this process's memory, a ring of the last {@link MODEL_EVENTS_RING_SIZE} events
 * no older than {@link MODEL_EVENTS_RING_AGE_MS} for `Last-Event-ID` replay. The epoch is 12 random hex digits.
 * Ends its streams on application shutdown.
 */
export class InMemoryModelEvents implements ModelEvents, OnApplicationShutdown {
  readonly epoch = randomBytes(6).toString('hex');
  private seq = 0;
  private readonly ring: ModelEvent[] = [];
  private readonly live = new Subject<ModelEvent>();
  private readonly ended = new Subject<void>();
  private isEnded = false;
  private open = 0;

  /** @param now the clock, ms (tests). */
  constructor(private readonly now: () => number = Date.now) {}

  publish(input: ModelEventInput): ModelEvent {
    const seq = ++this.seq;
    const event: ModelEvent = { ...input, id: `${this.epoch}-${seq}`, seq, at: this.now() };
    this.ring.push(event);
    this.trim(event.at);
    if (!this.isEnded) this.live.next(event);
    return event;
  }

  stream(lastEventId?: string): Observable<ModelEvent> {
    return defer(() => {
      if (this.isEnded) return EMPTY;
      const last = parseEventId(lastEventId);
      this.trim(this.now());
      const replay = last && last.epoch === this.epoch ? this.ring.filter((e) => e.seq > last.seq) : [];
      // The snapshot and the subscription happen in one synchronous turn: no event falls between them.
      const live$ = this.live.pipe(takeUntil(this.ended));
      this.open++;
      return concat(from(replay), live$).pipe(finalize(() => this.open--));
    });
  }

  /** Streams subscribed now (diagnostics, tests: a client that left must not keep one). */
  get openStreams(): number {
    return this.open;
  }

  end(): void {
    if (this.isEnded) return;
    this.isEnded = true;
    this.ended.next();
    this.ended.complete();
  }

  /** Ends the streams when the application closes (a plain `app.close()` too). */
  onApplicationShutdown(): void {
    this.end();
  }

  /** Drops events beyond the ring's size or age. */
  private trim(now: number): void {
    let drop = Math.max(0, this.ring.length - MODEL_EVENTS_RING_SIZE);
    while (drop < this.ring.length && now - this.ring[drop].at > MODEL_EVENTS_RING_AGE_MS) drop++;
    if (drop > 0) this.ring.splice(0, drop);
  }
}

/**
 * Publishes each record of a progress stream (pull, push, create) as an event of `type` for `model`, with the
 * principal of the request that subscribes (read at subscribe time from the request context). The records pass
 * through unchanged; without a bus nothing is published.
 * @param data the event fields of one record (wire-named).
 */
export function publishProgress<T>(
  events: ModelEvents | undefined,
  type: ModelEventType,
  model: string,
  source$: Observable<T>,
  data: (record: T) => Record<string, unknown>,
): Observable<T> {
  if (!events) return source$;
  return defer(() => {
    const principal = currentRequestContext()?.principal;
    return source$.pipe(
      tap((record) =>
        events.publish({ type, model, data: data(record), ...(principal !== undefined ? { principal } : {}) }),
      ),
    );
  });
}
