import { roleOf, TenantPolicy } from './tenant-policy';

/**
 * Whether `text` matches the glob `pattern` (a policy's `models` entry; docs/security.md "Tenants"): `*` matches any
 * run of characters, `/` and `:` included (so `hf.co/*` covers every model of that host, `llama3*` every tag of
 * every `llama3…` model), `?` exactly one character, everything else itself; case-insensitive, as Ollama compares
 * model names. No character classes, braces or escapes: model names cannot contain `*` or `?`. Own code rather than a
 * path-glob library because those treat `/` as a separator `*` must not cross (and add syntax a model list does not
 * need); this is the linear-space wildcard match with single-star backtracking, O(pattern × text) at worst, no
 * regular expression.
 */
export function matchesGlob(pattern: string, text: string): boolean {
  const p = pattern.toLowerCase();
  const t = text.toLowerCase();
  let pi = 0;
  let ti = 0;
  let star = -1; // position in p just after the last `*` seen
  let resume = 0; // position in t that `*` has consumed up to
  while (ti < t.length) {
    if (pi < p.length && p[pi] === '*') {
      star = ++pi;
      resume = ti;
    } else if (pi < p.length && (p[pi] === '?' || p[pi] === t[ti])) {
      pi++;
      ti++;
    } else if (star >= 0) {
      pi = star;
      ti = ++resume;
    } else {
      return false;
    }
  }
  while (pi < p.length && p[pi] === '*') pi++;
  return pi === p.length;
}

/**
 * Whether a policy limits its principal to a model list: only a `user` with `models` is limited; no policy, an
 * `admin` (whatever its list) and a policy without `models` see every model.
 */
export function limitsModels(policy: TenantPolicy | undefined): policy is TenantPolicy & { models: string[] } {
  return policy?.models !== undefined && roleOf(policy) === 'user';
}

/**
 * Whether a policy lets its principal see and use a model, given the names the model goes by (its display name, that
 * name without an implied `:latest`, its fully qualified name: see ModelsService). True when the policy does not
 * limit models ({@link limitsModels}); else when one of its `models` globs matches one of the names.
 */
export function allowsModel(policy: TenantPolicy | undefined, names: readonly string[]): boolean {
  if (!limitsModels(policy)) return true;
  return policy.models.some((pattern) => names.some((name) => matchesGlob(pattern, name)));
}
