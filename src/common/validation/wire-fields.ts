import type { ApiPropertyOptions } from '@nestjs/swagger';

// OpenAPI forms of the loosely typed fields of the native API (`@GoAny()` fields, decoded by the services), shared by
// the DTOs that carry them (reference/ollama-api.md §3.2–§3.5).

/** `model`: required by the route (its service answers 400/404 without it). */
export const MODEL_FIELD: ApiPropertyOptions = {
  required: true,
  description: 'Model name, `[host/][namespace/]model[:tag]` (tag `latest` when omitted).',
  example: 'llama3.2',
};

/** `keep_alive`: seconds or a Go duration. */
export const KEEP_ALIVE_FIELD: ApiPropertyOptions = {
  oneOf: [{ type: 'number' }, { type: 'string' }],
  description:
    'How long the model stays loaded after the request: seconds (number) or a Go duration (`"5m"`, `"1h30m"`); ' +
    'negative keeps it loaded, 0 unloads it at once. Default OLLAMA_KEEP_ALIVE (5m).',
  example: '5m',
};

/** `format`: `"json"` or a JSON schema (grammar-enforced). */
export const FORMAT_FIELD: ApiPropertyOptions = {
  oneOf: [
    { type: 'string', enum: ['json'] },
    { type: 'object', additionalProperties: true },
  ],
  description: '`"json"` or a JSON Schema object: the output is constrained by a grammar to match it.',
};

/** `think`: on/off or a level. */
export const THINK_FIELD: ApiPropertyOptions = {
  oneOf: [{ type: 'boolean' }, { type: 'string', enum: ['low', 'medium', 'high', 'max'] }],
  description: 'Thinking on (`true`), off (`false`) or a level; default on for thinking-capable models.',
};

/** `options`: runtime parameters. */
export const OPTIONS_FIELD: ApiPropertyOptions = {
  description:
    'Runtime options (Modelfile PARAMETER names: `temperature`, `num_ctx`, `num_predict`, `seed`, `stop`, ' +
    '`top_k`, `top_p`, …), over the Modelfile values and the defaults.',
  example: { temperature: 0.7, num_ctx: 4096 },
};

/** `stream`: NDJSON by default. */
export const STREAM_FIELD: ApiPropertyOptions = {
  description: 'Default true: `application/x-ndjson` chunks; false: one JSON object.',
};
