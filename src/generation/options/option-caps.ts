import type { OptionMap } from '../../common/options';
import type { TenantLimits } from '../../security/tenant-policy';

/** The two limits of a tenant policy that cap a request's options (docs/security.md "Tenants"). */
export type OptionCaps = Pick<TenantLimits, 'max_context' | 'max_output_tokens'>;

/** num_ctx (tokens) under the policy's `max_context`; unchanged without one. */
export function capContext(numCtx: number, caps: OptionCaps | undefined): number {
  const cap = caps?.max_context;
  return cap !== undefined && cap > 0 && numCtx > cap ? cap : numCtx;
}

/**
 * num_predict (output tokens) under the policy's `max_output_tokens`: a larger value and an unlimited one (negative:
 * -1, or Ollama's -2 "fill the context") become the cap; unchanged without one.
 */
export function capOutputTokens(numPredict: number, caps: OptionCaps | undefined): number {
  const cap = caps?.max_output_tokens;
  if (cap === undefined || cap <= 0) return numPredict;
  return numPredict < 0 || numPredict > cap ? cap : numPredict;
}

/**
 * The request options a policy holds a request to (pure; what CompletionService.plan applies through
 * resolveOptions, so a limiter that reserves output tokens agrees with what runs): `num_ctx` capped at
 * `max_context` when it is set, `num_predict` (the native name of OpenAI's `max_tokens` / `max_completion_tokens`,
 * the Responses API's `max_output_tokens` and Anthropic's `max_tokens`) capped at `max_output_tokens`, and set to it
 * when absent or unlimited. Pass the merged map (request over the Modelfile's parameters) to get the effective
 * num_predict; a num_ctx that comes from the defaults (OLLAMA_CONTEXT_LENGTH, 4096) is capped by resolveOptions.
 * Other keys are returned as they are; without caps the same object is returned.
 */
export function capOptions(options: OptionMap, caps: OptionCaps | undefined): OptionMap {
  if (caps?.max_context === undefined && caps?.max_output_tokens === undefined) return options;
  const out: OptionMap = { ...options };
  if (caps.max_context !== undefined && typeof out.num_ctx === 'number') {
    out.num_ctx = capContext(Math.trunc(out.num_ctx), caps);
  }
  if (caps.max_output_tokens !== undefined) {
    const requested = typeof out.num_predict === 'number' ? Math.trunc(out.num_predict) : -1;
    out.num_predict = capOutputTokens(requested, caps);
  }
  return out;
}
