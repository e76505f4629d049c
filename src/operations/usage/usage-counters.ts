import { Counter, Registry } from 'prom-client';
import type { UsageRecord } from './usage.store';

/**
 * The per-caller usage counters of /metrics (docs/observability.md), labelled by principal name and model (and the
 * refusal reason): `llamad_usage_requests_total`, `llamad_usage_prompt_tokens_total`,
 * `llamad_usage_cached_tokens_total`, `llamad_usage_completion_tokens_total`, `llamad_usage_refusals_total`. The
 * labels arrive bounded (usage-labels.ts: at most 100 principal names and 100 models each, later ones `other`; five
 * reasons and `other`), so the series are at most 101 × 101 per counter (× 6 for refusals). Model `""` = the request
 * ran no generation (refused before its body was read, a listing route).
 */
export class UsageCounters {
  private readonly requests: Counter<'principal' | 'model'>;
  private readonly promptTokens: Counter<'principal' | 'model'>;
  private readonly cachedTokens: Counter<'principal' | 'model'>;
  private readonly completionTokens: Counter<'principal' | 'model'>;
  private readonly refusals: Counter<'principal' | 'model' | 'reason'>;

  /** @param registers the registries the counters join (the application's own). */
  constructor(registers: Registry[]) {
    const labelNames = ['principal', 'model'] as const;
    this.requests = new Counter({
      name: 'llamad_usage_requests_total',
      help: 'Requests per caller (principal name) and model, refused ones included; model "" = ran no generation.',
      labelNames,
      registers,
    });
    this.promptTokens = new Counter({
      name: 'llamad_usage_prompt_tokens_total',
      help: 'Prompt tokens per caller (principal name) and model, reused from the KV cache or evaluated.',
      labelNames,
      registers,
    });
    this.cachedTokens = new Counter({
      name: 'llamad_usage_cached_tokens_total',
      help: 'Prompt tokens reused from the KV cache, per caller (principal name) and model.',
      labelNames,
      registers,
    });
    this.completionTokens = new Counter({
      name: 'llamad_usage_completion_tokens_total',
      help: 'Tokens generated per caller (principal name) and model.',
      labelNames,
      registers,
    });
    this.refusals = new Counter({
      name: 'llamad_usage_refusals_total',
      help:
        'Requests refused by the caller policy, per caller (principal name), model and reason (requests_per_minute, ' +
        'tokens_per_minute, tokens_per_day, concurrent_requests, forbidden, other).',
      labelNames: ['principal', 'model', 'reason'] as const,
      registers,
    });
  }

  /** Counts one finished request (its labels already bounded). */
  count(entry: UsageRecord): void {
    const labels = { principal: entry.principal, model: entry.model };
    this.requests.inc(labels);
    // Token series start at 0 with the caller's first request, so rate() sees them begin.
    this.promptTokens.inc(labels, entry.promptTokens);
    this.cachedTokens.inc(labels, entry.cachedTokens);
    this.completionTokens.inc(labels, entry.completionTokens);
    if (entry.refusal !== undefined) this.refusals.inc({ ...labels, reason: entry.refusal });
  }
}
