import type { BlobPin } from './model-store';

/**
 * This process's pins (ModelStore.pin): digests an in-flight create or pull will reference, counted per live pin,
 * and the unreferenced digests a prune left only because they were pinned (pruned when their last pin goes).
 * Pins are per process: other daemons see a blob being prepared only through its fresh mtime (the startup sweep
 * spares young files) and commitManifest's check.
 */
export class BlobPins {
  /** Pinned digest → number of live pins holding it. */
  private readonly counts = new Map<string, number>();
  /** Unreferenced digests a prune left only because they were pinned. */
  private readonly deferred = new Set<string>();

  /** @param prune prunes digests freed by a release (called with those a prune deferred; failures are ignored). */
  constructor(private readonly prune: (digests: string[]) => Promise<unknown>) {}

  /**
   * A new pin holding `digests` (see BlobPin).
   * @param digests `sha256:<hex>` digests to pin at once.
   */
  pin(digests: Iterable<string> = []): BlobPin {
    const held = new Set<string>();
    let released = false;
    const add = (...more: string[]) => {
      if (released) return;
      for (const d of more) {
        if (held.has(d)) continue;
        held.add(d);
        this.counts.set(d, (this.counts.get(d) ?? 0) + 1);
      }
    };
    add(...digests);
    return {
      add,
      release: async () => {
        if (released) return;
        released = true;
        const freed: string[] = [];
        for (const d of held) {
          const n = (this.counts.get(d) ?? 1) - 1;
          if (n > 0) {
            this.counts.set(d, n);
            continue;
          }
          this.counts.delete(d);
          if (this.deferred.delete(d)) freed.push(d);
        }
        if (freed.length > 0) await this.prune(freed).catch(() => undefined);
      },
    };
  }

  /** Whether a digest is pinned by a live pin. */
  has(digest: string): boolean {
    return this.counts.has(digest);
  }

  /** Remembers a pinned digest a prune skipped, to prune it when its last pin is released. */
  defer(digest: string): void {
    this.deferred.add(digest);
  }
}
