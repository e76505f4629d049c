/** What the RPC endpoint tracking reads of a loaded runner (SchedulerService's LoadedRunner). */
export interface RpcHolderEntry {
  /** The weights path. */
  key: string;
  /** In-flight requests. */
  refCount: number;
  /** Set once the runner is being closed (it keeps its endpoints until it is gone). */
  unloading: boolean;
}

/**
 * The RPC workers held by one runner, from the start of its load until its process is gone (or its load failed).
 * Obtained from {@link RpcEndpoints.claim}.
 */
export interface RpcClaim<E> {
  /** The endpoints, `host:port` lower-cased. */
  readonly endpoints: ReadonlySet<string>;
  /** The weights path of the load. */
  readonly key: string;
  /** The loaded runner, once its load succeeded ({@link RpcEndpoints.attach}). */
  entry?: E;
  /** Gives the endpoints back (idempotent): the load failed, or the runner is gone. */
  release(): void;
}

/** `Host:Port` → `host:port` (host names compare case-insensitively, as the LLAMAD_RPC_SERVERS allow-list). */
function endpointKey(endpoint: string): string {
  return endpoint.trim().toLowerCase();
}

/**
 * Which RPC workers (RunnerSpec.rpcServers, `host:port`) each runner holds, across runner processes (issue 32 item 7).
 * An `rpc-server` serves one client connection at a time and ggml-rpc keeps that connection for as long as any buffer
 * on the worker lives, so two runner processes cannot share a worker: the second one's connection would wait in the
 * worker's accept queue. (Before runners were processes, models of the one daemon process shared ggml's connection;
 * native/rpc.cpp's per-process "endpoints in use" set only skips the reachability probe for them.) So a load claims its
 * endpoints before its runner starts, and keeps them until that runner is gone; a load that needs an endpoint held by
 * another runner first evicts that runner, like a memory eviction (load-capacity.ts): an idle one is closed at once, a
 * busy one is expired (no new request reaches it) and closed when its last request ends; a load still in flight or a
 * runner still closing is waited for. Claims are taken in the same turn as the check. Main thread only.
 */
export class RpcEndpoints<E extends RpcHolderEntry> {
  private readonly claims = new Set<RpcClaim<E>>();
  /** Called whenever a claim is released or attached. */
  private waiters: (() => void)[] = [];

  /**
   * Claims `endpoints` for a load of `key`, evicting or waiting for the runners that hold any of them first.
   * @param evict expires the runner (closing it now when idle) and resolves once it is gone.
   * @param check throws to stop waiting (the scheduler shuts down); called before every decision.
   * @returns the claim (with no endpoints when `endpoints` is empty: nothing to wait for). Call `release` when the load
   *   fails; else {@link attach} the loaded runner and release once it is gone.
   */
  async claim(
    key: string,
    endpoints: readonly string[],
    evict: (holder: E, reason: string) => Promise<void>,
    check: () => void,
  ): Promise<RpcClaim<E>> {
    const wanted = new Set(endpoints.map(endpointKey));
    for (;;) {
      check();
      const held = this.holder(wanted);
      if (!held) break;
      const shared = [...held.endpoints].filter((e) => wanted.has(e)).join(',');
      if (held.entry && !held.entry.unloading) {
        await evict(held.entry, `rpc server ${shared} in use by ${held.key}`);
      } else {
        await this.changed(); // a load in flight, or a runner closing
      }
    }
    let released = false;
    const claim: RpcClaim<E> = {
      endpoints: wanted,
      key,
      release: () => {
        if (released) return;
        released = true;
        this.claims.delete(claim);
        this.wake();
      },
    };
    if (wanted.size > 0) this.claims.add(claim);
    return claim;
  }

  /**
   * Records the runner that a successful load's claim belongs to (it can then be evicted by later loads, which are
   * woken to do so).
   */
  attach(claim: RpcClaim<E>, entry: E): void {
    claim.entry = entry;
    this.wake();
  }

  /** The first claim sharing an endpoint with `wanted`. */
  private holder(wanted: ReadonlySet<string>): RpcClaim<E> | undefined {
    if (wanted.size === 0) return undefined;
    for (const c of this.claims) for (const e of c.endpoints) if (wanted.has(e)) return c;
    return undefined;
  }

  private wake(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves when the next claim is released or attached to its runner. */
  private changed(): Promise<void> {
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}
