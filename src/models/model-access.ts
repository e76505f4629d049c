import { currentRequestContext } from '../observability/request-context';
import { allowsModel, limitsModels } from '../security/model-allow-list';
import { DEFAULT_TAG, ModelName } from './model-name';

/**
 * The names a policy's `models` globs are matched against (docs/security.md "Tenants"): the display name
 * (`llama3:latest`, `hf.co/org/x:q4`), the same without an implied `:latest` tag (`llama3`), and the fully qualified
 * name (`registry.ollama.ai/library/llama3:latest`).
 */
export function policyNames(name: ModelName): string[] {
  const short = name.toShortString();
  const names = [short];
  const latest = `:${DEFAULT_TAG}`;
  if (name.tag.toLowerCase() === DEFAULT_TAG) names.push(short.slice(0, short.length - latest.length));
  names.push(name.toFullString());
  return names;
}

/**
 * Whether the current request's principal may see and use a model (its policy's `models` list; issue 33). Outside
 * a request (a library call) and without a policy every model is visible. A model it may not see must answer exactly
 * as one that does not exist.
 */
export function isModelVisible(name: ModelName): boolean {
  const policy = currentRequestContext()?.policy;
  // Without a list (the common case) no name is built.
  return !limitsModels(policy) || allowsModel(policy, policyNames(name));
}

/** Whether the current request's principal sees every model (no `models` list applies to it). */
export function seesEveryModel(): boolean {
  return !limitsModels(currentRequestContext()?.policy);
}
