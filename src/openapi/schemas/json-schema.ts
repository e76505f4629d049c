/**
 * A JSON Schema 2020-12 object as OpenAPI 3.1 embeds it (nullable as a `type` array, `const`, …), typed loosely:
 * @nestjs/swagger's SchemaObject is the 3.0 shape.
 */
export type JsonSchema = { [keyword: string]: unknown };

/** A reference to a component schema. */
export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

/** `{type: string}` with an optional description. */
export const str = (description?: string): JsonSchema => withDescription({ type: 'string' }, description);

/** `{type: integer}` with an optional description. */
export const int = (description?: string): JsonSchema => withDescription({ type: 'integer' }, description);

/** `{type: number}` with an optional description. */
export const num = (description?: string): JsonSchema => withDescription({ type: 'number' }, description);

/** `{type: boolean}` with an optional description. */
export const bool = (description?: string): JsonSchema => withDescription({ type: 'boolean' }, description);

/** A string with one fixed value. */
export const lit = (value: string): JsonSchema => ({ type: 'string', const: value });

/** A string with a fixed set of values. */
export const oneOfStr = (...values: string[]): JsonSchema => ({ type: 'string', enum: values });

/** An array of `items`. */
export const arr = (items: JsonSchema, description?: string): JsonSchema =>
  withDescription({ type: 'array', items }, description);

/** `schema` or null (OpenAPI 3.1: `type` arrays for simple types, `anyOf` otherwise; never `nullable`). */
export function nullable(schema: JsonSchema): JsonSchema {
  if (typeof schema.type === 'string' && schema.const === undefined && schema.enum === undefined) {
    return { ...schema, type: [schema.type, 'null'] };
  }
  return { anyOf: [schema, { type: 'null' }] };
}

/** A free-form JSON object. */
export const anyObject = (description?: string): JsonSchema =>
  withDescription({ type: 'object', additionalProperties: true }, description);

/**
 * An object schema. `required` lists the properties always present; `open` (default false) lets unknown properties
 * through (`additionalProperties: true`), as the compat request bodies do (unknown fields are ignored).
 */
export function obj(
  properties: Record<string, JsonSchema>,
  required: string[] = [],
  options: { open?: boolean; description?: string } = {},
): JsonSchema {
  const schema: JsonSchema = { type: 'object', properties };
  if (required.length > 0) schema.required = required;
  if (options.open) schema.additionalProperties = true;
  return withDescription(schema, options.description);
}

/**
 * One server-sent event (`event: <name>` when given, then `data: <JSON>`), as a `text/event-stream` response
 * describes its items: `data` is the event's JSON payload.
 */
export function sseEvent(data: JsonSchema, description: string, event?: JsonSchema): JsonSchema {
  const properties: Record<string, JsonSchema> = event ? { event, data } : { data };
  return obj(properties, ['data'], { description });
}

function withDescription(schema: JsonSchema, description?: string): JsonSchema {
  return description === undefined ? schema : { ...schema, description };
}

/**
 * `keep_alive` on the compatibility routes (beyond OpenAI, Anthropic and Ollama's compat layer): the native routes'
 * form (reference/ollama-api.md §4.2; common/time/keep-alive.ts parseCompatKeepAlive).
 */
export const keepAliveField: JsonSchema = {
  oneOf: [{ type: 'number' }, { type: 'string' }],
  description:
    'Beyond OpenAI/Anthropic: how long the model stays loaded after the request, as on /api/generate: seconds ' +
    '(number) or a Go duration (`"5m"`, `"1h30m"`); negative keeps it loaded, 0 unloads it when idle. Default ' +
    'OLLAMA_KEEP_ALIVE (5m).',
  example: '5m',
};
