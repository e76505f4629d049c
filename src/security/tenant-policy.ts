/**
 * What one principal may do (issue 33; docs/security.md "Tenants"): the per-key entries of the keys file
 * (`LLAMAD_API_KEYS_FILE` as YAML or JSON) or what a host's AUTHORIZER / TENANT_POLICY_SOURCE returns. Field names are
 * the keys file's, exactly. A principal without a policy is an unlimited `admin` that sees every model (the
 * behaviour without a policy file).
 */
export interface TenantPolicy {
  /** The name usage and metrics are reported under (bounded: from the policy, never the key). */
  name?: string;
  /** `admin` may create, pull, push, copy and delete models and see every model; `user` may not. Default `admin`. */
  role?: TenantRole;
  /**
   * Model names or globs (`*` any run of characters, `?` one) the principal may use; others answer the dialect's
   * "model not found". Absent = every model.
   */
  models?: string[];
  limits?: TenantLimits;
}

/** A principal's role: `admin` manages models; `user` only uses the models of its list. */
export type TenantRole = 'admin' | 'user';

/** A principal's limits; each absent field is unlimited. Counts are per principal, across replicas with a store. */
export interface TenantLimits {
  /** Requests per minute (tenant-facing routes). */
  requests_per_minute?: number;
  /** Tokens (prompt + completion) per minute; admission reserves prompt + output limit, settled at the end. */
  tokens_per_minute?: number;
  /** Tokens (prompt + completion) per day: the quota. */
  tokens_per_day?: number;
  /** Requests in flight at once. */
  concurrent_requests?: number;
  /** Cap on the output tokens of one request (`num_predict`, `max_tokens`, `max_output_tokens`). */
  max_output_tokens?: number;
  /** Cap on the context a request may load a model with (`num_ctx`), tokens. */
  max_context?: number;
  /** Scheduling weight in the fair queue of a busy model (default 1): a weight-2 principal gets twice the turns. */
  weight?: number;
}

/** The role a policy gives (`admin` when the policy or its role is absent). */
export function roleOf(policy: TenantPolicy | undefined): TenantRole {
  return policy?.role ?? 'admin';
}
