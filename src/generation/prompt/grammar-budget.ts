import { InvalidRequestError, RequestCancelledError } from '../../common/errors';
import { Runner } from '../../runner';
import { OutputFormat, ToolDefinition } from '../generation.types';
import { JSON_OBJECT_GRAMMAR, MAX_GRAMMAR_BYTES, MAX_SCHEMA_BYTES } from './format';

/**
 * One grammar budget per request (docs/security.md "Limits"): every JSON Schema a request brings — `format` and the
 * parameters of every tool — is converted to a grammar (llama.cpp json_schema_to_grammar, about 2.5 µs per byte of
 * schema) by the prompt stage in rendered mode, or by llama.cpp common/chat inside the native render (the tool-call
 * grammar). The limits therefore apply to the request as a whole, in both modes and on every dialect (they all reach
 * ChatService / GenerateService and the prompt stage).
 */

/**
 * Largest total JSON Schema text (UTF-16 code units ≈ bytes) of one request: `format` plus the parameters of every
 * tool. 256 KiB is about 0.65 s of conversion on one core (off the JS thread), and far above real tool sets (a coding
 * agent's ~20 tools are ~30 KB); 40 tools of 60 KB each (2.4 MB) are refused before any conversion.
 */
export const MAX_REQUEST_SCHEMA_BYTES = 256 * 1024;

/** The parameters schema of a tool as JSON text, as native mode hands it to common/chat (an empty object schema when absent). */
export function toolSchemaText(tool: ToolDefinition): string {
  return JSON.stringify(tool.function?.parameters ?? { type: 'object', properties: {} });
}

/** @throws RequestCancelledError when `signal` fired (the client went away). */
export function throwIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new RequestCancelledError();
}

/**
 * The grammar budget of one request: built (and checked) before any conversion, then charged with every schema
 * converted and every grammar produced.
 * - total schema text over {@link MAX_REQUEST_SCHEMA_BYTES} → 400 at once ({@link GrammarBudget.of});
 * - one schema over MAX_SCHEMA_BYTES → 400 before its conversion (as before);
 * - the grammars produced for the request (format, tool arguments, the native render's tool-call grammar) over
 *   MAX_GRAMMAR_BYTES in total → 400.
 * Schema texts are computed once and kept (`formatSchema`, `toolSchemas`) for the conversions and native renders.
 */
export class GrammarBudget {
  private converted = 0;
  private produced = 0;
  /** The largest tool-call grammar a native render built (a request's renders build the same one). */
  private rendered = 0;

  private constructor(
    /** The `format` schema as JSON text (absent for no format or `"json"`). */
    readonly formatSchema: string | undefined,
    /** Each tool's parameters as JSON text (toolSchemaText), in order. */
    readonly toolSchemas: string[],
  ) {}

  /**
   * The budget of a request with this `format` and these tools, checked: the schema texts are measured one by one and
   * the request is refused as soon as their total passes {@link MAX_REQUEST_SCHEMA_BYTES} (nothing converted yet).
   * @throws InvalidRequestError (400) `tools: the JSON schemas of this request (format and the parameters of every
   *   tool) are at least N bytes, more than the limit of M bytes per request` (`format:` when there are no tools).
   */
  static of(format: OutputFormat | undefined, tools: ToolDefinition[] | undefined): GrammarBudget {
    const param = tools && tools.length > 0 ? 'tools' : 'format';
    let total = 0;
    const check = (text: string) => {
      total += text.length;
      if (total <= MAX_REQUEST_SCHEMA_BYTES) return;
      throw new InvalidRequestError(
        `${param}: the JSON schemas of this request (format and the parameters of every tool) are at least ` +
          `${total} bytes, more than the limit of ${MAX_REQUEST_SCHEMA_BYTES} bytes per request`,
        param,
      );
    };
    const formatSchema = format?.kind === 'schema' ? JSON.stringify(format.schema) : undefined;
    if (formatSchema !== undefined) check(formatSchema);
    const toolSchemas = (tools ?? []).map((t) => {
      const text = toolSchemaText(t);
      check(text);
      return text;
    });
    return new GrammarBudget(formatSchema, toolSchemas);
  }

  /**
   * Converts one schema through the runner (off the JS thread) within the budget: size checks first, then the
   * conversion, then the produced grammar is charged.
   * @param param the request field named in errors (`format`, `tools`).
   * @param wrap turns a conversion failure into the caller's error (e.g. `invalid JSON schema in format: …`);
   *   absent: the runner's error as it is.
   * @throws InvalidRequestError (400) over a limit; RequestCancelledError when `signal` fired; the conversion's error.
   */
  async convert(
    runner: Runner,
    schema: string,
    param: string,
    signal?: AbortSignal,
    wrap?: (err: unknown) => Error,
  ): Promise<string> {
    if (schema.length > MAX_SCHEMA_BYTES) {
      throw new InvalidRequestError(
        `${param}: the JSON schema is ${schema.length} bytes, more than the limit of ${MAX_SCHEMA_BYTES} bytes`,
        param,
      );
    }
    this.converted += schema.length;
    if (this.converted > MAX_REQUEST_SCHEMA_BYTES) {
      throw new InvalidRequestError(
        `${param}: the JSON schemas of this request are ${this.converted} bytes, more than the limit of ` +
          `${MAX_REQUEST_SCHEMA_BYTES} bytes per request`,
        param,
      );
    }
    throwIfCancelled(signal);
    let grammar: string;
    try {
      grammar = await runner.jsonSchemaToGrammar(schema, signal);
    } catch (err) {
      if (err instanceof RequestCancelledError || !wrap) throw err;
      throw wrap(err);
    }
    throwIfCancelled(signal);
    this.charge(grammar, param);
    return grammar;
  }

  /**
   * Charges the tool-call grammar llama.cpp built inside a native render: the largest of the request's renders counts
   * (a request renders its conversation more than once when it is fitted, always with the same tools).
   * @throws InvalidRequestError (400) as {@link charge}.
   */
  chargeRender(grammar: string, param: string): void {
    this.check(grammar, param, Math.max(this.rendered, grammar.length) - this.rendered);
    this.rendered = Math.max(this.rendered, grammar.length);
  }

  /**
   * Charges a produced grammar (format, a tool's arguments).
   * @throws InvalidRequestError (400) `<param>: the JSON schema makes a grammar of N bytes, more than the limit of M
   *   bytes` for one grammar, `<param>: the JSON schemas of this request make grammars of N bytes, more than the limit
   *   of M bytes per request` for the total.
   */
  charge(grammar: string, param: string): void {
    this.check(grammar, param, grammar.length);
    this.produced += grammar.length;
  }

  /** @throws InvalidRequestError (400) when `grammar`, or the request's total grown by `added`, is over the limit. */
  private check(grammar: string, param: string, added: number): void {
    if (grammar.length > MAX_GRAMMAR_BYTES) {
      throw new InvalidRequestError(
        `${param}: the JSON schema makes a grammar of ${grammar.length} bytes, more than the limit of ` +
          `${MAX_GRAMMAR_BYTES} bytes`,
        param,
      );
    }
    const total = this.produced + this.rendered + added;
    if (total > MAX_GRAMMAR_BYTES) {
      throw new InvalidRequestError(
        `${param}: the JSON schemas of this request make grammars of ${total} bytes, more than the limit ` +
          `of ${MAX_GRAMMAR_BYTES} bytes per request`,
        param,
      );
    }
  }
}

/**
 * The GBNF grammar of a request's `format` (reference/ollama-api.md §9): the fixed JSON-object grammar for `"json"`,
 * else the schema converted through the runner within the request's budget.
 * @throws InvalidRequestError `invalid JSON schema in format: …` when the schema cannot be converted, or the limit it
 *   exceeds; RequestCancelledError when `signal` fired.
 */
export function formatGrammar(
  format: OutputFormat,
  budget: GrammarBudget,
  runner: Runner,
  signal?: AbortSignal,
): Promise<string> {
  if (format.kind === 'json' || budget.formatSchema === undefined) return Promise.resolve(JSON_OBJECT_GRAMMAR);
  return budget.convert(
    runner,
    budget.formatSchema,
    'format',
    signal,
    (err) =>
      new InvalidRequestError(`invalid JSON schema in format: ${(err as Error).message}`, 'format', { cause: err }),
  );
}
