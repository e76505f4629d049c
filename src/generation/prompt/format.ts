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
 * Largest JSON Schema (its JSON text, UTF-16 code units ≈ bytes) converted to a grammar, for `format` and for each
 * tool (docs/security.md "Limits"). The conversion takes about 2.5 µs per byte of schema (llama.cpp
 * json_schema_to_grammar, run off the JS thread), so this bounds one to about 0.16 s; real schemas, a coding agent's
 * tools included, stay far below. The request as a whole has its own budget (grammar-budget.ts).
 */
export const MAX_SCHEMA_BYTES = 64 * 1024;

/**
 * Largest GBNF grammar a request may make from its schemas, one grammar and all of them together (grammar-budget.ts).
 * The engine applies the grammar to the candidates of every sampled token, in time that grows with its alternatives:
 * a 50,000-value enum (≈ 940 KB of grammar) stalled its model's generations for minutes.
 */
export const MAX_GRAMMAR_BYTES = 256 * 1024;

/**
 * A lazy-grammar trigger that starts the format grammar after the thinking end tag (§9, thinking + format): the
 * grammar applies from the first capture group, i.e. right after `</think>` and its whitespace.
 */
export function afterThinkingTrigger(closeTag: string): { type: 'pattern'; value: string } {
  const escaped = closeTag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return { type: 'pattern', value: `[\\s\\S]*?${escaped}\\s*([\\s\\S]*)` };
}
