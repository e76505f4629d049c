import { arr, int, JsonSchema, obj, oneOfStr, ref, str } from './json-schema';

/** Component schemas of the operational routes (GET /health, GET /ready, GET /api/usage). */
export const OPERATIONS_SCHEMAS: Record<string, JsonSchema> = {
  HealthStatus: obj({ status: oneOfStr('ok') }, ['status'], { description: 'The daemon is alive.' }),
  ReadyStatus: obj(
    {
      status: oneOfStr('ok', 'unavailable'),
      error: str('Why the daemon cannot serve (503 only): the model store or the native addon.'),
    },
    ['status'],
    { description: 'Whether the daemon can serve requests.' },
  ),
  UsageRow: obj(
    {
      principal: str('The caller: its policy name, a host tenant name, else `key:<12 hex>` or `anonymous`.'),
      model: str('The model its generations ran on; empty for requests that ran none (refused, listings).'),
      requests: int('Requests (refused ones included).'),
      prompt_tokens: int('Prompt tokens, reused from the KV cache or evaluated.'),
      cached_tokens: int('Prompt tokens reused from the KV cache.'),
      completion_tokens: int('Tokens generated.'),
      refusals: {
        type: 'object',
        description:
          'Refused requests by reason: requests_per_minute, tokens_per_minute, tokens_per_day, ' +
          'concurrent_requests, forbidden (each present, 0 when none), and other.',
        additionalProperties: { type: 'integer' },
      },
    },
    ['principal', 'model', 'requests', 'prompt_tokens', 'cached_tokens', 'completion_tokens', 'refusals'],
    { description: 'The usage of one caller on one model.' },
  ),
  UsageResponse: obj(
    {
      start: str('RFC 3339: start of the range the figures cover (not before this replica started).'),
      end: str('RFC 3339: end of the range.'),
      usage: arr(ref('UsageRow'), 'One row per caller and model, sorted by caller then model.'),
    },
    ['start', 'end', 'usage'],
    { description: "This replica's usage per caller and model over a time range (GET /api/usage)." },
  ),
};
