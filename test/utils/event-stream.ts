import { EventSource, type FetchLike } from 'eventsource';

/** The event types GET /api/events sends (docs/observability.md "Model events"). */
export const MODEL_EVENT_TYPES = [
  'load.start',
  'load.progress',
  'load.ready',
  'load.failed',
  'unload',
  'pull.progress',
  'push.progress',
  'create.step',
] as const;

/** One event as an EventSource client got it. */
export interface ReceivedEvent {
  type: string;
  id: string;
  data: { model: string; time: string } & Record<string, unknown>;
}

/**
 * GET /api/events through the official EventSource semantics (the `eventsource` package: reconnection with
 * `Last-Event-ID`, `retry:`), collecting every event in order.
 */
export class EventCollector {
  readonly events: ReceivedEvent[] = [];
  readonly es: EventSource;
  /** The `Last-Event-ID` header of each connection attempt (null when none was sent). */
  readonly lastEventIds: (string | null)[] = [];
  /** When each connection attempt started, ms since the epoch. */
  readonly connectedAt: number[] = [];
  /** Aborts the current connection (the client then reconnects as EventSource does after a network error). */
  private abortCurrent?: () => void;
  private readonly waiters = new Set<() => void>();

  /** @param headers sent on every connection (e.g. `authorization`). */
  constructor(url: string, headers: Record<string, string> = {}) {
    const fetchLike: FetchLike = async (input, init) => {
      const controller = new AbortController();
      init.signal?.addEventListener('abort', () => controller.abort());
      const all = { ...(init.headers as Record<string, string>), ...headers };
      this.connectedAt.push(Date.now());
      this.lastEventIds.push(Object.entries(all).find(([k]) => k.toLowerCase() === 'last-event-id')?.[1] ?? null);
      const res = await fetch(input, { ...init, headers: all, signal: controller.signal });
      if (!res.body) return res;
      // The body through a stream this side can end: a cut looks to EventSource like the connection ending (it then
      // reconnects with Last-Event-ID), and the real connection is aborted.
      const reader = res.body.getReader();
      let ended = false;
      let end: () => void = () => undefined;
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          end = () => {
            if (ended) return;
            ended = true;
            c.close();
          };
        },
        async pull(c) {
          const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
          if (ended) return;
          if (done) end();
          else c.enqueue(value);
        },
        cancel() {
          controller.abort();
        },
      });
      this.abortCurrent = () => {
        end();
        controller.abort();
      };
      return new Response(body, { status: res.status, headers: res.headers });
    };
    this.es = new EventSource(url, { fetch: fetchLike });
    for (const type of MODEL_EVENT_TYPES) {
      this.es.addEventListener(type, (e: MessageEvent) => {
        this.events.push({ type, id: e.lastEventId, data: JSON.parse(e.data as string) as ReceivedEvent['data'] });
        for (const wake of this.waiters) wake();
      });
    }
  }

  /** Resolves once the connection is open (rejects on an error before that). */
  opened(): Promise<void> {
    if (this.es.readyState === EventSource.OPEN) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.es.addEventListener('open', () => resolve(), { once: true });
      this.es.addEventListener('error', (e) => reject(new Error(`EventSource error: ${String(e.message)}`)), {
        once: true,
      });
    });
  }

  /** Cuts the current connection from the client side (a network failure: EventSource reconnects). */
  cut(): void {
    this.abortCurrent?.();
  }

  /**
   * Waits until an event (from index `from` on) matches, at most `timeoutMs` (a hang guard, not a timing assertion).
   * @returns the first matching event.
   */
  async waitFor(match: (e: ReceivedEvent) => boolean, timeoutMs = 30_000, from = 0): Promise<ReceivedEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.slice(from).find(match);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `no matching event within ${timeoutMs} ms; got ${JSON.stringify(this.events.map((e) => e.type))}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done(): void {
          clearTimeout(timer);
          waiters.delete(done);
          resolve();
        }
        const waiters = this.waiters;
        waiters.add(done);
      });
    }
  }

  /** The events of `model` (short name), in order. */
  of(model: string): ReceivedEvent[] {
    return this.events.filter((e) => e.data.model === model);
  }

  close(): void {
    this.es.close();
  }
}
