import { InvalidRequestError } from '../../common/errors';
import { OutputFormat } from '../generation.types';

/**
 * Structured outputs (reference/ollama-api.md §9): `format` validation and the grammar for `"json"`.
 */

/**
 * GBNF for `format: "json"`: one JSON object (objects, arrays, strings with escapes, numbers, true/false/null,
 * bounded optional whitespace), like the fixed grammar Ollama gives llama-server on the completion path.
 */
export const JSON_OBJECT_GRAMMAR = String.raw`root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt/] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws     ::= | " " | "\n" [ \t]{0,20}
`;

/**
 * Validates `format` as sent: `null`/`""`/absent → undefined; `"json"` → json; a JSON object → a schema.
 * @throws InvalidRequestError `invalid format: "<raw JSON>"; expected "json" or a valid JSON Schema object` (Ollama's
 *   text with Go `%q` quoting of the raw value; Ollama answers it with 500 from the runner, we answer 400).
 */
export function decodeFormat(value: unknown): OutputFormat | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (value === 'json') return { kind: 'json' };
  if (typeof value === 'object' && !Array.isArray(value)) {
    return { kind: 'schema', schema: value as Record<string, unknown> };
  }
  throw new InvalidRequestError(
    `invalid format: ${JSON.stringify(JSON.stringify(value))}; expected "json" or a valid JSON Schema object`,
    'format',
  );
}

/**
 * Largest JSON Schema (its JSON text, UTF-16 code units ≈ bytes) converted to a grammar, for `format` and for the
 * tools of a forced tool call (docs/security.md "Limits"). The conversion runs on the daemon's JS thread, about
 * 2.5 µs per byte of schema (llama.cpp json_schema_to_grammar), so this bounds it to a few tens of ms; real schemas,
 * a coding agent's tools included, stay far below.
 */
export const MAX_SCHEMA_BYTES = 64 * 1024;

/**
 * Largest GBNF grammar a request may make from a schema. The engine applies the grammar to the candidates of every
 * sampled token, in time that grows with its alternatives: a 50,000-value enum (≈ 940 KB of grammar) stalled its
 * model's generations for minutes.
 */
export const MAX_GRAMMAR_BYTES = 256 * 1024;

/** @throws InvalidRequestError (400) when the schema text is over {@link MAX_SCHEMA_BYTES}. */
function checkSchemaSize(schema: string, param: string): void {
  if (schema.length <= MAX_SCHEMA_BYTES) return;
  throw new InvalidRequestError(
    `${param}: the JSON schema is ${schema.length} bytes, more than the limit of ${MAX_SCHEMA_BYTES} bytes`,
    param,
  );
}

/** @throws InvalidRequestError (400) when the grammar is over {@link MAX_GRAMMAR_BYTES}. */
function checkGrammarSize(grammar: string, param: string): void {
  if (grammar.length <= MAX_GRAMMAR_BYTES) return;
  throw new InvalidRequestError(
    `${param}: the JSON schema makes a grammar of ${grammar.length} bytes, more than the limit of ` +
      `${MAX_GRAMMAR_BYTES} bytes`,
    param,
  );
}

/**
 * `toGrammar` with the request limits: a schema over {@link MAX_SCHEMA_BYTES} is refused before conversion, a grammar
 * over {@link MAX_GRAMMAR_BYTES} after it.
 * @param param the request field the schema came from (`format`, `tools`), named in the error.
 * @throws InvalidRequestError (400) naming the limit; whatever `toGrammar` throws.
 */
export function boundedToGrammar(toGrammar: (schema: string) => string, param: string): (schema: string) => string {
  return (schema) => {
    checkSchemaSize(schema, param);
    const grammar = toGrammar(schema);
    checkGrammarSize(grammar, param);
    return grammar;
  };
}

/**
 * The GBNF grammar of a format: the fixed JSON-object grammar, or the schema converted by `toGrammar`
 * (llama.cpp json_schema_to_grammar through the runner), within the limits of {@link boundedToGrammar}.
 * @throws InvalidRequestError `invalid JSON schema in format: …` when the schema cannot be converted, or the limit
 *   it exceeds.
 */
export function formatGrammar(format: OutputFormat, toGrammar: (schema: string) => string): string {
  if (format.kind === 'json') return JSON_OBJECT_GRAMMAR;
  const schema = JSON.stringify(format.schema);
  checkSchemaSize(schema, 'format');
  let grammar: string;
  try {
    grammar = toGrammar(schema);
  } catch (err) {
    throw new InvalidRequestError(`invalid JSON schema in format: ${(err as Error).message}`, 'format', { cause: err });
  }
  checkGrammarSize(grammar, 'format');
  return grammar;
}

/**
 * A lazy-grammar trigger that starts the format grammar after the thinking end tag (§9, thinking + format): the
 * grammar applies from the first capture group, i.e. right after `</think>` and its whitespace.
 */
export function afterThinkingTrigger(closeTag: string): { type: 'pattern'; value: string } {
  const escaped = closeTag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return { type: 'pattern', value: `[\\s\\S]*?${escaped}\\s*([\\s\\S]*)` };
}
