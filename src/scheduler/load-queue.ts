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
 * What the queue does with one request at the head of its model's line: `load` finds or loads the runner and takes a
 * reference on it for the request (rejecting with the load's error); `deliver` hands it to a requester who still
 * waits, `abandon` to nobody (the requester went away meanwhile: the reference is dropped and the runner idles under
 * its keep-alive); `sameLoad` says whether a request
 * waiting behind a failed one needs the very same load (it then fails with the same error instead of loading again).
 */
export interface LoadQueueHandler<T> {
  load(request: AcquireRequest): Promise<T>;
  deliver(entry: T, request: AcquireRequest): void;
  abandon(entry: T, request: AcquireRequest): void;
  sameLoad(failed: AcquireRequest, waiting: AcquireRequest): boolean;
}

/**
 * The scheduler's pending-load queue (Ollama's pendingReqCh and processPending loop, reference/ollama-api.md §7.3),
 * one line per model (weights path): requests of one model are served in arrival order, one load at a time, so that
 * concurrent requests for the same model coalesce on one load (the next ones find the runner loaded); lines of
 * different models run independently, so a slow or stuck load delays only its own model (issue 32 item 5; the
 * scheduler's capacity accounting keeps parallel loads within memory). When a load fails, the requests waiting in its
 * line for the same load fail with the same error. Caps the pending requests (waiting or loading, all models) at
 * `maxQueue`; a request whose AbortSignal fires while it waits leaves the queue. Main thread only.
 */
export class LoadQueue<T> {
  /** Per weights path: the requests waiting for a load, in arrival order. */
  private readonly lines = new Map<string, PendingLoad<T>[]>();
  /** Per weights path: the request whose load is in progress (not in its line any more). */
  private readonly active = new Map<string, PendingLoad<T>>();
  /** Weights paths whose line is being processed. */
  private readonly processing = new Set<string>();

  constructor(
    private readonly handler: LoadQueueHandler<T>,
    private readonly maxQueue: () => number,
  ) {}

  /** Requests waiting for a load, including those loading now. */
  pendingCount(): number {
    let count = this.active.size;
    for (const line of this.lines.values()) count += line.length;
    return count;
  }

  /**
   * Requests waiting for a load (including those loading now) per model name (AcquireRequest.modelName, else the
   * weights path: the name the runner will carry), for the per-model gauges (scheduler.stats.ts). Only models with
   * requests pending appear.
   */
  pendingByModel(): Map<string, number> {
    const counts = new Map<string, number>();
    const add = (p: PendingLoad<T>) => {
      const name = p.request.modelName ?? p.request.spec.modelPath;
      counts.set(name, (counts.get(name) ?? 0) + 1);
    };
    for (const pending of this.active.values()) add(pending);
    for (const line of this.lines.values()) for (const pending of line) add(pending);
    return counts;
  }

  /**
   * Queues a request in its model's line; resolves with what `handler.load` gave once `deliver` took it.
   * @throws ServerBusyError when `maxQueue` requests are already pending (503, §7.3); RequestCancelledError when
   *   `signal` aborts while the request waits; the load's own errors.
   */
  enqueue(request: AcquireRequest, signal?: AbortSignal): Promise<T> {
    if (this.pendingCount() >= this.maxQueue()) return Promise.reject(new ServerBusyError());
    const key = request.spec.modelPath;
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        pending.cancelled = true;
        const line = this.lines.get(key);
        const at = line?.indexOf(pending) ?? -1;
        if (at >= 0) line?.splice(at, 1);
        if (line?.length === 0 && !this.processing.has(key)) this.lines.delete(key);
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
      const line = this.lines.get(key);
      if (line) line.push(pending);
      else this.lines.set(key, [pending]);
      void this.process(key);
    });
  }

  /** Fails every waiting request (not those loading now) with `err` (shutdown). */
  rejectAll(err: unknown): void {
    const lines = [...this.lines.values()];
    this.lines.clear();
    for (const line of lines) for (const pending of line) pending.reject(err);
  }

  /** The pending loop of one model's line (§7.3): one request at a time. */
  private async process(key: string): Promise<void> {
    if (this.processing.has(key)) return;
    this.processing.add(key);
    try {
      for (let next = this.next(key); next; next = this.next(key)) {
        if (next.cancelled) continue;
        this.active.set(key, next);
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
          this.failSame(key, next.request, err);
        } finally {
          this.active.delete(key);
        }
      }
    } finally {
      this.processing.delete(key);
    }
  }

  /** Takes the head of a line (dropping the line once empty). */
  private next(key: string): PendingLoad<T> | undefined {
    const line = this.lines.get(key);
    const head = line?.shift();
    if (line && line.length === 0) this.lines.delete(key);
    return head;
  }

  /** Fails the requests of a line that wait for the same load as `failed`. */
  private failSame(key: string, failed: AcquireRequest, err: unknown): void {
    const line = this.lines.get(key);
    if (!line) return;
    const same = line.filter((p) => this.handler.sameLoad(failed, p.request));
    const rest = line.filter((p) => !same.includes(p));
    if (rest.length > 0) this.lines.set(key, rest);
    else this.lines.delete(key);
    for (const pending of same) pending.reject(err);
  }
}
