import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { lock } from 'proper-lockfile';
import { ServerBusyError } from '../common/errors';

/** Name of the lock (a directory made with mkdir, proper-lockfile's atomic primitive) inside the models directory. */
export const STORE_LOCK_NAME = '.llamad-store.lock';

/**
 * A held lock older than this (its mtime is refreshed every STORE_LOCK_UPDATE_MS while held) belongs to a process
 * that died without releasing it (kill -9, power loss) and is taken over, ms.
 */
export const STORE_LOCK_STALE_MS = 10_000;

/** How often a holder refreshes the lock's mtime, ms (at most half of the stale time). */
export const STORE_LOCK_UPDATE_MS = 2_500;

/** Timing of a StoreLock (tests shrink it). */
export interface StoreLockTiming {
  /** See STORE_LOCK_STALE_MS (proper-lockfile's minimum is 2000), ms. */
  staleMs: number;
  /** See STORE_LOCK_UPDATE_MS (at least 1000, at most staleMs / 2), ms. */
  updateMs: number;
  /** Longest wait for another process to release the lock before giving up, ms (keep it above staleMs). */
  acquireTimeoutMs: number;
}

/** Default timing: a dead holder is taken over after 10 s; a live one is waited for up to 60 s. */
export const DEFAULT_STORE_LOCK_TIMING: StoreLockTiming = {
  staleMs: STORE_LOCK_STALE_MS,
  updateMs: STORE_LOCK_UPDATE_MS,
  acquireTimeoutMs: 60_000,
};

/** The async context of a critical section: `held` turns false on release, so late continuations do not inherit it. */
interface Holder {
  held: boolean;
}

/**
 * The model store's mutual exclusion, across processes: a lock directory `<models>/.llamad-store.lock` taken with
 * proper-lockfile (so two daemons on one OLLAMA_MODELS are safe), behind an in-process FIFO queue (proper-lockfile
 * itself is not reentrant and would make two callers of one process poll each other).
 *
 * - Critical sections are meant to be short (read the referenced set and delete; verify blobs and write a
 *   manifest): never a download or a quantization.
 * - Reentrant within one critical section: `run()` called from inside a running `run()` callback (same async
 *   context, lock still held) runs at once instead of deadlocking.
 * - A lock left by a killed process is taken over once its mtime is older than `staleMs`; while held, the mtime is
 *   refreshed every `updateMs`. Should the lock be lost anyway (event loop blocked past `staleMs`), `onCompromised`
 *   is told and the section finishes (proper-lockfile's default, throwing from a timer, would kill the daemon).
 */
export class StoreLock {
  private readonly context = new AsyncLocalStorage<Holder>();
  /** Tail of the in-process queue: resolves when the previous section has released the lock. */
  private tail: Promise<void> = Promise.resolve();

  /**
   * @param dir the models directory (created on first use).
   * @param onCompromised told when a held lock was lost or could not be released (logging).
   */
  constructor(
    private readonly dir: () => string,
    private readonly timing: StoreLockTiming = DEFAULT_STORE_LOCK_TIMING,
    private readonly onCompromised: (err: Error) => void = () => undefined,
  ) {}

  /** Absolute path of the lock directory. */
  get path(): string {
    return join(this.dir(), STORE_LOCK_NAME);
  }

  /** Whether the caller runs inside a critical section of this lock. */
  get held(): boolean {
    return this.context.getStore()?.held === true;
  }

  /**
   * Runs `critical` holding the lock: after every earlier section of this process, and while no other process
   * holds it. Errors of `critical` propagate; the lock is released either way.
   * @throws ServerBusyError (503) when another process keeps the lock (fresh) for longer than `acquireTimeoutMs`;
   *   file-system errors (e.g. a read-only models directory) as they are.
   */
  run<T>(critical: () => Promise<T>): Promise<T> {
    if (this.held) return critical();
    const result = this.tail.then(async () => {
      const release = await this.acquire();
      const holder: Holder = { held: true };
      try {
        return await this.context.run(holder, critical);
      } finally {
        holder.held = false;
        await release().catch((err: unknown) => this.onCompromised(err as Error));
      }
    });
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  private async acquire(): Promise<() => Promise<void>> {
    const dir = this.dir();
    await mkdir(dir, { recursive: true });
    const { staleMs, updateMs, acquireTimeoutMs } = this.timing;
    try {
      return await lock(dir, {
        lockfilePath: this.path,
        realpath: false,
        stale: staleMs,
        update: updateMs,
        // Exponential back-off from 20 ms to 500 ms: enough attempts to outlast acquireTimeoutMs.
        retries: { retries: Math.ceil(acquireTimeoutMs / 500) + 8, factor: 1.5, minTimeout: 20, maxTimeout: 500 },
        onCompromised: this.onCompromised,
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ELOCKED') {
        throw new ServerBusyError(
          `the model store is locked by another process (${STORE_LOCK_NAME} in the models directory); try again`,
        );
      }
      throw err;
    }
  }
}
