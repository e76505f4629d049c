/** The label value every name beyond a {@link BoundedNames} cap is reported under. */
export const OTHER_LABEL = 'other';

/** Most distinct principal names reported per process; later ones are reported as {@link OTHER_LABEL}. */
export const MAX_USAGE_PRINCIPALS = 100;

/** Most distinct model names reported per process; later ones are reported as {@link OTHER_LABEL}. */
export const MAX_USAGE_MODELS = 100;

/** Longest name kept, characters; longer ones are cut (a host's tenant id could be anything). */
export const MAX_USAGE_NAME_LENGTH = 128;

/**
 * The refusal reasons counted by name (`RequestContext.refusal`: the TenantLimits field that refused the request, or
 * `forbidden`); any other value is counted as {@link OTHER_LABEL}.
 */
export const REFUSAL_REASONS: readonly string[] = [
  'requests_per_minute',
  'tokens_per_minute',
  'tokens_per_day',
  'concurrent_requests',
  'forbidden',
];

/**
 * A bounded set of label values (Prometheus series and usage cells multiply by every distinct value): the first
 * `max` distinct names are kept as they are (cut to {@link MAX_USAGE_NAME_LENGTH}), every later one maps to
 * {@link OTHER_LABEL} for the life of the process. Names seen once keep their slot; nothing is evicted, so a name's
 * series never changes meaning.
 */
export class BoundedNames {
  private readonly kept = new Set<string>();

  /** @param max how many distinct names to keep (≥ 0). */
  constructor(private readonly max: number) {}

  /** The label value for `name`: itself (cut), or {@link OTHER_LABEL} once `max` other names were kept. */
  label(name: string): string {
    const value = name.length > MAX_USAGE_NAME_LENGTH ? name.slice(0, MAX_USAGE_NAME_LENGTH) : name;
    if (this.kept.has(value)) return value;
    if (this.kept.size >= this.max) return OTHER_LABEL;
    this.kept.add(value);
    return value;
  }

  /** Distinct names kept so far. */
  get size(): number {
    return this.kept.size;
  }
}

/** The label of a refusal reason: a known one as is, anything else {@link OTHER_LABEL}. */
export function refusalLabel(reason: string): string {
  return REFUSAL_REASONS.includes(reason) ? reason : OTHER_LABEL;
}
