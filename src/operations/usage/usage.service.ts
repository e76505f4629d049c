import { Inject, Injectable } from '@nestjs/common';
import type { RequestContext } from '../../observability';
import { BoundedNames, MAX_USAGE_MODELS, MAX_USAGE_PRINCIPALS, refusalLabel, REFUSAL_REASONS } from './usage-labels';
import { usageRange } from './usage-range';
import { USAGE_STORE, UsageRecord, UsageReport, UsageStore } from './usage.store';

/** One row of `GET /api/usage` (wire names, snake_case as Ollama spells its fields). */
export interface UsageRowWire {
  principal: string;
  model: string;
  requests: number;
  prompt_tokens: number;
  cached_tokens: number;
  completion_tokens: number;
  /** Every known reason (0 when none), plus `other` when some other reason refused a request. */
  refusals: Record<string, number>;
}

/** The body of `GET /api/usage`. */
export interface UsageResponseWire {
  /** RFC 3339 (UTC, ms): the start of the range the figures cover (not before start-up). */
  start: string;
  /** RFC 3339 (UTC, ms): the end of the range. */
  end: string;
  usage: UsageRowWire[];
}

/**
 * Usage per caller (issue 33 item 5; docs/security.md "Usage"): turns each finished request's RequestContext into a
 * bounded {@link UsageRecord} (principal names and models capped by {@link BoundedNames}, refusal reasons by
 * {@link refusalLabel}), hands it to the {@link USAGE_STORE}, and answers `GET /api/usage` from the store. A request
 * counts when it carried a principal (an authorized request to one of llamad's routes; public routes and 401s do
 * not), refused ones included. Per replica unless the host's store is shared.
 */
@Injectable()
export class UsageService {
  private readonly principals = new BoundedNames(MAX_USAGE_PRINCIPALS);
  private readonly models = new BoundedNames(MAX_USAGE_MODELS);
  /** When this service started: the default start of a report. */
  readonly sinceMs = Date.now();

  constructor(@Inject(USAGE_STORE) private readonly store: UsageStore) {}

  /**
   * Records one finished request (called once, when its response ended or its connection closed).
   * @returns the record as stored (bounded labels), or undefined when the request had no principal.
   */
  record(context: RequestContext, atMs = Date.now()): UsageRecord | undefined {
    if (context.principal === undefined) return undefined;
    const g = context.generation;
    const entry: UsageRecord = {
      principal: this.principals.label(context.principalName ?? context.principal),
      model: g ? this.models.label(g.model) : '',
      promptTokens: g?.promptTokens ?? 0,
      cachedTokens: g?.cachedTokens ?? 0,
      completionTokens: g?.completionTokens ?? 0,
      ...(context.refusal !== undefined ? { refusal: refusalLabel(context.refusal) } : {}),
    };
    try {
      const done = this.store.record(entry, atMs);
      if (done instanceof Promise) done.catch(() => undefined);
    } catch {
      // A host's store that throws loses this record; the request already ended.
    }
    return entry;
  }

  /**
   * The body of `GET /api/usage` for its query (`start`, `end`: RFC 3339 or unix seconds; default start-up → now).
   * @throws InvalidRequestError (400) for a bad time or a start after the end.
   */
  async report(query: { start?: unknown; end?: unknown }, nowMs = Date.now()): Promise<UsageResponseWire> {
    const { startMs, endMs } = usageRange(query, this.sinceMs, nowMs);
    const report: UsageReport = await this.store.query(startMs, endMs);
    return {
      start: new Date(report.startMs).toISOString(),
      end: new Date(report.endMs).toISOString(),
      usage: report.rows.map((row) => ({
        principal: row.principal,
        model: row.model,
        requests: row.requests,
        prompt_tokens: row.promptTokens,
        cached_tokens: row.cachedTokens,
        completion_tokens: row.completionTokens,
        refusals: {
          ...Object.fromEntries(REFUSAL_REASONS.map((reason) => [reason, 0])),
          ...row.refusals,
        },
      })),
    };
  }
}
