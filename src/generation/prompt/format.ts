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
 * The GBNF grammar of a format: the fixed JSON-object grammar, or the schema converted by `toGrammar`
 * (llama.cpp json_schema_to_grammar through the runner).
 * @throws InvalidRequestError `invalid JSON schema in format: …` when the schema cannot be converted.
 */
export function formatGrammar(format: OutputFormat, toGrammar: (schema: string) => string): string {
  if (format.kind === 'json') return JSON_OBJECT_GRAMMAR;
  try {
    return toGrammar(JSON.stringify(format.schema));
  } catch (err) {
    throw new InvalidRequestError(`invalid JSON schema in format: ${(err as Error).message}`, 'format', { cause: err });
  }
}

/**
 * A lazy-grammar trigger that starts the format grammar after the thinking end tag (§9, thinking + format): the
 * grammar applies from the first capture group, i.e. right after `</think>` and its whitespace.
 */
export function afterThinkingTrigger(closeTag: string): { type: 'pattern'; value: string } {
  const escaped = closeTag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return { type: 'pattern', value: `[\\s\\S]*?${escaped}\\s*([\\s\\S]*)` };
}
