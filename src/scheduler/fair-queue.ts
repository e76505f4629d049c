import { MonoTypeOperatorFunction, Observable } from 'rxjs';

/**
 * Who a generation runs for, as the slot gate weighs it: the principal's id (RequestContext.principal; `anonymous`
 * for callers without keys and for library use outside a request) and its scheduling weight (TenantLimits.weight,
 * default 1).
 */
export interface FairTicket {
  principal: string;
  /** Share of the slots relative to other waiting principals (> 0; anything else counts as 1). */
  weight: number;
}

/** The ticket of callers without a principal or policy: one shared principal of weight 1 (plain FIFO among them). */
export const ANONYMOUS_TICKET: FairTicket = Object.freeze({ principal: 'anonymous', weight: 1 });

/**
 * The ticket of a request from its context fields (call where the request's context is current).
 * @param principal RequestContext.principal (undefined = anonymous)
 * @param weight TenantPolicy.limits.weight (undefined, non-finite or <= 0 = 1)
 */
export function fairTicket(principal: string | undefined, weight: number | undefined): FairTicket {
  const w = weight !== undefined && Number.isFinite(weight) && weight > 0 ? weight : 1;
  return { principal: principal ?? ANONYMOUS_TICKET.principal, weight: w };
}

/**
 * Permits of a runner's slot gate for `slots` slots (RunnerSpec.numParallel): exactly the slots, so no generation
 * waits inside the runner (whose own queue is first come, first served) and a newcomer gets the first slot freed after
 * it arrived. The cost: a freed slot stays idle for about one decode step while the end reaches the daemon and the
 * next generation comes back. Measured (docs/benchmarks.md "Fair queuing"): also keeping `slots − 1` generations ready
 * in the runner did not raise A's throughput measurably on the bench VM (17.2 vs 17.7 tok/s) but put B behind them,
 * past the bound (1.16 of it, against 0.87 with this gate).
 */
export function slotGatePermits(slots: number): number {
  const n = Math.max(1, Math.floor(slots) || 1);
  return n;
}

/** One generation waiting for a slot. */
interface Waiter {
  /** Arrival order (ties between principals go to the earlier arrival). */
  seq: number;
  grant: () => void;
}

/** A principal's waiters (arrival order) and its virtual finish time. */
interface Flow {
  queue: Waiter[];
  weight: number;
  /** Virtual time at which the principal's last dispatched generation "ends": the start tag of its next one. */
  finish: number;
}

/**
 * A loaded runner's slot gate: lets at most `permits` generations ({@link slotGatePermits}: the runner's slots) into
 * the runner at once and, while all permits are taken, serves the waiting ones in weighted fair order across
 * principals — start-time fair queuing (SFQ, Goyal et al. 1996), the virtual-time form of weighted round-robin: each
 * principal's next generation starts at virtual time `max(its previous finish, now)`, costs `1 / weight`, and the
 * waiting generation with the smallest start tag goes first (ties: the earlier arrival). Within a principal, arrival
 * order. So a principal that queued 100 requests gets its share, while one that arrives later is served at the next
 * free slot; a principal of weight 2 gets two slots for each one of a weight-1 principal while both wait. A principal
 * that was idle starts at the current virtual time (no saved-up credit), and no waiter starves: virtual time only
 * grows, and each principal can put only a bounded number of generations ahead of a given tag.
 * With one principal (every caller anonymous, no policy) the order is plain FIFO.
 *
 * A permit is given back when the generation ends (complete, error, unsubscribe) and handed to the next waiter in
 * the same call stack (no extra event-loop turn); a waiter that unsubscribes leaves the queue at once. The gate belongs
 * to one runner instance (a reload gets a fresh one): when that runner dies, the generations handed permits fail at
 * once (its generate() errors) and hand theirs on, so no waiter hangs. State is touched on the main thread only.
 */
export class FairGate {
  private readonly flows = new Map<string, Flow>();
  private inUse = 0;
  private queued = 0;
  private seq = 0;
  /** Start tag of the last generation let in. */
  private vtime = 0;
  /** Set while {@link drain} runs: a permit given back meanwhile is picked up by its loop, not by a nested one. */
  private draining = false;

  /** @param permits slots of the runner (>= 1; less counts as 1). */
  constructor(readonly permits: number) {
    this.permits = Math.max(1, Math.floor(permits) || 1);
  }

  /** Generations waiting for a permit now (they count as queued in /metrics and /api/ps). */
  get waiting(): number {
    return this.queued;
  }

  /** Generations holding a permit now. */
  get running(): number {
    return this.inUse;
  }

  /**
   * Waits for a permit for `ticket`'s principal, then calls `onGrant` with a `release` function (idempotent) to call
   * when the generation ends; a permit that is free (and nobody waiting ahead) is granted synchronously.
   * @returns a cancel function: before the grant it removes the waiter from the queue; after it, it is a no-op
   *   (call `release` instead).
   */
  enter(ticket: FairTicket, onGrant: (release: () => void) => void): () => void {
    const key = ticket.principal;
    let flow = this.flows.get(key);
    if (!flow) {
      flow = { queue: [], weight: ticket.weight, finish: this.vtime };
      this.flows.set(key, flow);
    }
    flow.weight = ticket.weight;
    // A principal that was not waiting starts now: it keeps no credit from an idle time.
    if (flow.queue.length === 0) flow.finish = Math.max(flow.finish, this.vtime);
    let state: 'waiting' | 'granted' | 'cancelled' = 'waiting';
    const waiter: Waiter = {
      seq: this.seq++,
      grant: () => {
        state = 'granted';
        let released = false;
        onGrant(() => {
          if (released) return;
          released = true;
          this.inUse--;
          this.drain();
        });
      },
    };
    flow.queue.push(waiter);
    this.queued++;
    this.drain();
    return () => {
      if (state !== 'waiting') return;
      state = 'cancelled';
      const f = this.flows.get(key);
      const i = f ? f.queue.indexOf(waiter) : -1;
      if (f && i >= 0) {
        f.queue.splice(i, 1);
        this.queued--;
        this.forget(key, f);
      }
    };
  }

  /**
   * `start()` run under a permit: subscribing waits for one (fair order), then subscribes to `start()`; the permit is
   * given back when that completes, errors or is unsubscribed. Unsubscribing while waiting leaves the queue.
   */
  admit<T>(ticket: FairTicket, start: () => Observable<T>): Observable<T> {
    return new Observable<T>((subscriber) => {
      let release: (() => void) | undefined;
      let closed = false;
      let inner: { unsubscribe(): void } | undefined;
      const cancel = this.enter(ticket, (rel) => {
        release = rel;
        if (closed) {
          rel();
          return;
        }
        try {
          inner = start().subscribe({
            next: (v) => subscriber.next(v),
            // The permit goes to the next waiter before this caller hears the end (same call stack).
            error: (err: unknown) => {
              rel();
              subscriber.error(err);
            },
            complete: () => {
              rel();
              subscriber.complete();
            },
          });
        } catch (err) {
          rel();
          subscriber.error(err);
        }
      });
      return () => {
        closed = true;
        cancel();
        inner?.unsubscribe();
        release?.();
      };
    });
  }

  /** {@link admit} as an operator: the source is subscribed under a permit. */
  gated<T>(ticket: FairTicket): MonoTypeOperatorFunction<T> {
    return (source) => this.admit(ticket, () => source);
  }

  /** Lets waiters in while permits are free, smallest start tag first. */
  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.inUse < this.permits && this.queued > 0) {
        const next = this.pick();
        if (!next) break;
        const [key, flow] = next;
        const waiter = flow.queue.shift() as Waiter;
        this.queued--;
        this.inUse++;
        this.vtime = flow.finish;
        flow.finish += 1 / flow.weight;
        this.forget(key, flow);
        waiter.grant();
      }
    } finally {
      this.draining = false;
    }
  }

  /**
   * The waiting principal whose head has the smallest start tag (ties: the earlier arrival). Principals with nobody
   * waiting that the virtual time has passed are dropped on the way, so the map holds only principals that wait or
   * still carry a tag ahead of the virtual time.
   */
  private pick(): [string, Flow] | undefined {
    let best: [string, Flow] | undefined;
    for (const entry of this.flows) {
      const flow = entry[1];
      if (flow.queue.length === 0) {
        this.forget(entry[0], flow);
        continue;
      }
      if (
        !best ||
        flow.finish < best[1].finish ||
        (flow.finish === best[1].finish && flow.queue[0].seq < best[1].queue[0].seq)
      ) {
        best = entry;
      }
    }
    return best;
  }

  /** Drops a principal with nobody waiting whose tag the virtual time has reached (it would restart there anyway). */
  private forget(key: string, flow: Flow): void {
    if (flow.queue.length === 0 && flow.finish <= this.vtime) this.flows.delete(key);
  }
}
