/**
 * Where per-caller usage is kept for `GET /api/usage` (issue 33 item 5; docs/security.md "Usage"): one record per
 * finished request, summed per principal name, model and time bucket. Injected through {@link USAGE_STORE}; the
 * default is {@link InMemoryUsageStore} (per replica, like /metrics). A host may provide its own (a database shared by
 * its replicas) with `LlamadModule.forRoot({ providers: [{ provide: USAGE_STORE, useClass: … }] })`.
 */
export const USAGE_STORE = Symbol('USAGE_STORE');

/** What one finished request used (names already bounded by the recorder, see usage-labels.ts). */
export interface UsageRecord {
  /** The principal's name (`RequestContext.principalName`: a policy name, a host's tenant name, `key:<12 hex>`). */
  principal: string;
  /** The model its generations ran on (`tiny:latest`); `''` when it ran none (a refused request, `/api/tags`). */
  model: string;
  /** Prompt tokens, reused from the KV cache or evaluated. */
  promptTokens: number;
  /** Of those, reused from the KV cache. */
  cachedTokens: number;
  /** Tokens generated. */
  completionTokens: number;
  /** The limit that refused it (`requests_per_minute`, …, `forbidden`), when refused. */
  refusal?: string;
}

/** The usage of one principal name on one model over a range (summed records). */
export interface UsageRow {
  principal: string;
  /** `''` for requests that ran no generation. */
  model: string;
  /** Requests (refused ones included). */
  requests: number;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  /** Refused requests by reason; empty when none was refused. */
  refusals: Record<string, number>;
}

/** The answer of {@link UsageStore.query}. */
export interface UsageReport {
  /** Start of the range the rows cover, ms since the epoch: the requested start, or later when no data is kept before. */
  startMs: number;
  /** End of the range, ms since the epoch (the requested end). */
  endMs: number;
  /** One row per principal name and model with any usage in the range, sorted by principal then model. */
  rows: UsageRow[];
}

/** The store behind {@link USAGE_STORE}. */
export interface UsageStore {
  /**
   * Adds one finished request at `atMs` (ms since the epoch). Called once per request when its response ended; must
   * not throw (an asynchronous store handles its own failures: a rejected promise is logged nowhere and dropped).
   */
  record(entry: UsageRecord, atMs: number): void | Promise<void>;
  /**
   * The usage of requests that ended in `[startMs, endMs)`, at the store's resolution (a bucket partly in the range
   * counts whole). `startMs <= endMs` (the caller validated the range).
   */
  query(startMs: number, endMs: number): UsageReport | Promise<UsageReport>;
}

/** Bounds of {@link InMemoryUsageStore}. */
export interface InMemoryUsageStoreOptions {
  /** Size of recent buckets, ms (default one minute). */
  bucketMs?: number;
  /** How long recent buckets are kept before they are merged into coarse ones, ms (default 24 hours). */
  fineForMs?: number;
  /** Size of coarse buckets, ms (default one hour; a multiple of `bucketMs`). */
  coarseBucketMs?: number;
  /** How long any usage is kept, ms (default 31 days); older buckets are dropped. */
  retentionMs?: number;
  /**
   * Most (principal, model, bucket) cells kept in all (default 200 000: some tens of MB at worst); beyond it the
   * oldest buckets are dropped, and later reports start after them.
   */
  maxCells?: number;
  /** The clock, ms since the epoch (tests). */
  now?: () => number;
}

/** The defaults of {@link InMemoryUsageStoreOptions}. */
export const DEFAULT_USAGE_STORE_OPTIONS: Required<Omit<InMemoryUsageStoreOptions, 'now'>> = {
  bucketMs: 60_000,
  fineForMs: 24 * 3_600_000,
  coarseBucketMs: 3_600_000,
  retentionMs: 31 * 24 * 3_600_000,
  maxCells: 200_000,
};

interface Cell {
  principal: string;
  model: string;
  requests: number;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  refusals?: Map<string, number>;
}

interface Bucket {
  /** ms since the epoch. */
  start: number;
  size: number;
  /** By principal + NUL + model. */
  cells: Map<string, Cell>;
}

/**
 * The default {@link UsageStore}: buckets in this process's memory, lost on restart, per replica (each daemon behind
 * a load balancer reports its own requests, as its /metrics does). Footprint bounded three ways: one-minute buckets
 * for the last 24 hours, merged into one-hour buckets after that; nothing older than 31 days; and at most
 * `maxCells` (principal, model, bucket) cells in all, the oldest buckets dropped first. The number of principal
 * names and models in a bucket is bounded by the recorder (usage-labels.ts). All work happens on the main thread;
 * `record` is O(1) but for the merge, done at most once per new bucket.
 */
export class InMemoryUsageStore implements UsageStore {
  /** When the store started: reports never start before it. */
  readonly sinceMs: number;
  private readonly options: Required<Omit<InMemoryUsageStoreOptions, 'now'>>;
  private readonly now: () => number;
  /** Ascending by start; a coarse bucket may cover fine ones of its hour still kept (each cell is in one bucket). */
  private buckets: Bucket[] = [];
  private cells = 0;
  /** Data before this time was dropped (retention or the cell cap). */
  private droppedBeforeMs = 0;

  constructor(options: InMemoryUsageStoreOptions = {}) {
    this.options = { ...DEFAULT_USAGE_STORE_OPTIONS, ...stripUndefined(options) };
    this.now = options.now ?? Date.now;
    this.sinceMs = this.now();
  }

  /** Cells held now (for tests and the footprint bound). */
  get cellCount(): number {
    return this.cells;
  }

  /** Buckets held now. */
  get bucketCount(): number {
    return this.buckets.length;
  }

  record(entry: UsageRecord, atMs: number): void {
    const bucket = this.bucketAt(atMs);
    if (!bucket) return; // older than what is kept
    const key = `${entry.principal}\u0000${entry.model}`;
    let cell = bucket.cells.get(key);
    if (!cell) {
      cell = {
        principal: entry.principal,
        model: entry.model,
        requests: 0,
        promptTokens: 0,
        cachedTokens: 0,
        completionTokens: 0,
      };
      bucket.cells.set(key, cell);
      this.cells++;
    }
    cell.requests++;
    cell.promptTokens += entry.promptTokens;
    cell.cachedTokens += entry.cachedTokens;
    cell.completionTokens += entry.completionTokens;
    if (entry.refusal !== undefined) {
      cell.refusals ??= new Map();
      cell.refusals.set(entry.refusal, (cell.refusals.get(entry.refusal) ?? 0) + 1);
    }
    this.enforceCellCap();
  }

  query(startMs: number, endMs: number): UsageReport {
    this.compact(this.now());
    const rows = new Map<string, UsageRow>();
    for (const bucket of this.buckets) {
      if (bucket.start >= endMs || bucket.start + bucket.size <= startMs) continue;
      for (const [key, cell] of bucket.cells) {
        let row = rows.get(key);
        if (!row) {
          row = {
            principal: cell.principal,
            model: cell.model,
            requests: 0,
            promptTokens: 0,
            cachedTokens: 0,
            completionTokens: 0,
            refusals: {},
          };
          rows.set(key, row);
        }
        addCell(row, cell);
      }
    }
    const sorted = [...rows.values()].sort((a, b) => compare(a.principal, b.principal) || compare(a.model, b.model));
    return { startMs: Math.min(Math.max(startMs, this.sinceMs, this.droppedBeforeMs), endMs), endMs, rows: sorted };
  }

  /** The bucket `atMs` falls in, created (and older ones merged or dropped) when new; undefined when too old. */
  private bucketAt(atMs: number): Bucket | undefined {
    const last = this.buckets[this.buckets.length - 1];
    if (last && atMs >= last.start && atMs < last.start + last.size) return last;
    const found = this.find(atMs);
    if (found) return found;
    if (atMs < this.droppedBeforeMs) return undefined;
    const { bucketMs } = this.options;
    const start = Math.floor(atMs / bucketMs) * bucketMs;
    let index = this.buckets.length;
    while (index > 0 && this.buckets[index - 1].start > start) index--;
    this.buckets.splice(index, 0, { start, size: bucketMs, cells: new Map() });
    this.compact(Math.max(atMs, this.now()));
    // The new bucket, or the coarse one it was merged into (a late record), or none (older than the retention).
    return this.find(atMs);
  }

  /** The bucket holding `atMs` (the latest such: a fine one before the coarse one that covers it). */
  private find(atMs: number): Bucket | undefined {
    for (let i = this.buckets.length - 1; i >= 0; i--) {
      const b = this.buckets[i];
      if (atMs >= b.start && atMs < b.start + b.size) return b;
    }
    return undefined;
  }

  /** Merges fine buckets older than `fineForMs` into coarse ones and drops buckets older than `retentionMs`. */
  private compact(nowMs: number): void {
    const { fineForMs, coarseBucketMs, retentionMs, bucketMs } = this.options;
    const keepAfter = nowMs - retentionMs;
    while (this.buckets.length > 0 && this.buckets[0].start + this.buckets[0].size <= keepAfter) {
      this.dropOldest();
    }
    if (coarseBucketMs <= bucketMs) return;
    const fineAfter = nowMs - fineForMs;
    const isOldFine = (b: Bucket) => b.size === bucketMs && b.start + b.size <= fineAfter;
    if (!this.buckets.some(isOldFine)) return;
    const merged: Bucket[] = [];
    for (const bucket of this.buckets) {
      if (!isOldFine(bucket)) {
        merged.push(bucket);
        continue;
      }
      const start = Math.floor(bucket.start / coarseBucketMs) * coarseBucketMs;
      let coarse = merged.findLast((b) => b.start === start && b.size === coarseBucketMs);
      if (!coarse) {
        coarse = { start, size: coarseBucketMs, cells: new Map() };
        let index = merged.length;
        while (index > 0 && merged[index - 1].start > start) index--;
        merged.splice(index, 0, coarse);
      }
      for (const [key, cell] of bucket.cells) {
        const into = coarse.cells.get(key);
        if (into) {
          mergeCell(into, cell);
          this.cells--;
        } else {
          coarse.cells.set(key, cell);
        }
      }
    }
    this.buckets = merged;
  }

  private enforceCellCap(): void {
    // The current bucket is never dropped for the cap (its cells are bounded by the recorder's name caps).
    while (this.cells > this.options.maxCells && this.buckets.length > 1) this.dropOldest();
  }

  private dropOldest(): void {
    const oldest = this.buckets.shift();
    if (!oldest) return;
    this.cells -= oldest.cells.size;
    this.droppedBeforeMs = Math.max(this.droppedBeforeMs, oldest.start + oldest.size);
  }
}

function addCell(row: UsageRow, cell: Cell): void {
  row.requests += cell.requests;
  row.promptTokens += cell.promptTokens;
  row.cachedTokens += cell.cachedTokens;
  row.completionTokens += cell.completionTokens;
  for (const [reason, n] of cell.refusals ?? []) row.refusals[reason] = (row.refusals[reason] ?? 0) + n;
}

function mergeCell(into: Cell, cell: Cell): void {
  into.requests += cell.requests;
  into.promptTokens += cell.promptTokens;
  into.cachedTokens += cell.cachedTokens;
  into.completionTokens += cell.completionTokens;
  for (const [reason, n] of cell.refusals ?? []) {
    into.refusals ??= new Map();
    into.refusals.set(reason, (into.refusals.get(reason) ?? 0) + n);
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
