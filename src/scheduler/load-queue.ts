import { RequestCancelledError, ServerBusyError } from '../common/errors';
import type { AcquireRequest } from './scheduler.types';

/** A request waiting for a load (Ollama's pendingReqCh entry). */
interface PendingLoad<T> {
  request: AcquireRequest;
  resolve(entry: T): void;
  reject(err: unknown): void;
  /** Set when the requester went away; the load may still finish and the runner then idles. */
  cancelled: boolean;
}

/**
 * What the queue does with one request at the head: `load` finds or loads the runner (rejecting with the load's
 * error); `deliver` hands it to a requester who still waits (taking a reference), `abandon` to nobody (the requester
 * went away meanwhile: the runner idles under its keep-alive).
 */
export interface LoadQueueHandler<T> {
  load(request: AcquireRequest): Promise<T>;
  deliver(entry: T, request: AcquireRequest): void;
  abandon(entry: T, request: AcquireRequest): void;
}

/**
 * The scheduler's pending-load queue (Ollama's pendingReqCh and processPending loop, reference/ollama-api.md §7.3):
 * requests that need a load wait here in arrival order and are loaded one at a time. Caps the pending requests
 * (waiting or loading) at `maxQueue`; a request whose AbortSignal fires while it waits leaves the queue.
 * All state is touched on the main thread only.
 */
export class LoadQueue<T> {
  /** Requests waiting for a load, in arrival order. */
  private readonly queue: PendingLoad<T>[] = [];
  /** The request whose load is in progress (not in `queue` any more). */
  private active?: PendingLoad<T>;
  private processing = false;

  constructor(
    private readonly handler: LoadQueueHandler<T>,
    private readonly maxQueue: () => number,
  ) {}

  /** Requests waiting for a load, including the one loading now. */
  pendingCount(): number {
    return this.queue.length + (this.active ? 1 : 0);
  }

  /**
   * Queues a request; resolves with what `handler.load` gave once `deliver` took it.
   * @throws ServerBusyError when `maxQueue` requests are already pending (503, §7.3); RequestCancelledError when
   *   `signal` aborts while the request waits; the load's own errors.
   */
  enqueue(request: AcquireRequest, signal?: AbortSignal): Promise<T> {
    if (this.pendingCount() >= this.maxQueue()) return Promise.reject(new ServerBusyError());
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        pending.cancelled = true;
        const at = this.queue.indexOf(pending);
        if (at >= 0) this.queue.splice(at, 1);
        reject(new RequestCancelledError());
      };
      const pending: PendingLoad<T> = {
        request,
        cancelled: false,
        resolve: (e) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(e);
        },
        reject: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(pending);
      void this.process();
    });
  }

  /** Fails every waiting request (not the one loading now) with `err` (shutdown). */
  rejectAll(err: unknown): void {
    for (const pending of this.queue.splice(0)) pending.reject(err);
  }

  /** The pending loop (§7.3): one request at a time. */
  private async process(): Promise<void> {
    if (this.processing) return;
    this.processing = true;
    try {
      for (let next = this.queue.shift(); next; next = this.queue.shift()) {
        if (next.cancelled) continue;
        this.active = next;
        try {
          const entry = await this.handler.load(next.request);
          if (next.cancelled) {
            this.handler.abandon(entry, next.request);
          } else {
            this.handler.deliver(entry, next.request);
            next.resolve(entry);
          }
        } catch (err) {
          next.reject(err);
        } finally {
          this.active = undefined;
        }
      }
    } finally {
      this.processing = false;
    }
  }
}
