/**
 * A GBNF grammar that admits only a template's own tool-call syntax (tool-call.syntax.ts) with each tool's arguments
 * valid against its JSON Schema: what forces a call (`tool_choice` "required", a named tool, Anthropic "any") in
 * rendered mode. The argument grammars come from llama.cpp's json_schema_to_grammar (passed in as `toGrammar`, so
 * this module stays free of the addon); reference native-core.md (grammars), ollama-api.md §8.5.
 */
import { gbnfLiteral, prefixRules, untilRules } from './gbnf';
import { ToolCallSyntax } from './tool-call.syntax';

/** A tool as requested (`api.Tool`): only the function name and its parameters' JSON Schema are used. */
export interface GrammarTool {
  function?: { name?: string; parameters?: unknown };
}

/** Options of buildToolCallGrammar. */
export interface ToolCallGrammarOptions {
  /**
   * Admit more than one call: tagged calls one per line, list calls separated by `, `. Bare JSON (`json`) always
   * admits one (Ollama's parser stops at the end of the first object). Default false (one call, as llama-server's
   * default `parallel_tool_calls`).
   */
  parallel?: boolean;
  /**
   * Thinking is on: the grammar admits a thinking block before the calls — any text up to the first `close` and
   * optional whitespace; it must be there when the prompt already ends with `open` (`startInThinking`), else it is
   * optional and starts with `open`.
   */
  thinking?: { open: string; close: string; startInThinking: boolean };
}

/** A tool's schema could not be converted to a grammar (the message names the tool). */
export class ToolSchemaError extends Error {
  constructor(
    readonly toolName: string,
    cause: unknown,
  ) {
    super(`invalid JSON schema in the parameters of tool ${JSON.stringify(toolName)}: ${(cause as Error).message}`, {
      cause,
    });
    this.name = 'ToolSchemaError';
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const SHAPING_KEYWORDS = ['type', '$ref', 'anyOf', 'oneOf', 'allOf', 'enum', 'const'];

/**
 * The JSON Schema the arguments of a call must follow: the tool's `parameters` as sent, with `type: "object"` added
 * when they do not say what type they are (absent or `{}` → any JSON object; properties without a type → that
 * object), since arguments are always an object.
 */
export function argumentsSchema(parameters: unknown): Record<string, unknown> {
  if (!isPlainObject(parameters)) return { type: 'object' };
  if (SHAPING_KEYWORDS.some((k) => k in parameters)) return parameters;
  return { ...parameters, type: 'object' };
}

/** The tools that can be called: named, first of each name. */
function callableTools(tools: readonly GrammarTool[]): { name: string; parameters: unknown }[] {
  const seen = new Set<string>();
  const out: { name: string; parameters: unknown }[] = [];
  for (const t of tools) {
    const name = t.function?.name;
    if (!name || seen.has(name)) continue;
    seen.add(name);
    out.push({ name, parameters: t.function?.parameters });
  }
  return out;
}

/**
 * The whole grammar (GBNF text, `root` first) of a forced tool call:
 * `root ::= [thinking] tool-calls`, where tool-calls is the syntax's `open` + call object + `close` (tagged, one or
 * with `parallel` several, one per line), `open` + objects separated by `, ` + `close` (list), or one bare object
 * (json); the call object is an alternation over the tools, each `tool<i>` the syntax's object text with the tool's
 * name as a JSON string literal and `args<i>-root`, the tool's json_schema_to_grammar output with every rule
 * prefixed `args<i>-`. Applied non-lazily, generation must start with the call (or the thinking block) and can only
 * end once the grammar is complete. Returns undefined when no tool has a name (nothing to force).
 * @param toGrammar llama.cpp json_schema_to_grammar (JSON Schema text → GBNF with a `root` rule)
 * @throws ToolSchemaError when a tool's parameters cannot be converted
 */
export function buildToolCallGrammar(
  syntax: ToolCallSyntax,
  tools: readonly GrammarTool[],
  toGrammar: (schema: string) => string,
  options: ToolCallGrammarOptions = {},
): string | undefined {
  const callable = callableTools(tools);
  if (callable.length === 0) return undefined;
  const lines: string[] = [];
  const think = options.thinking;
  if (think) {
    const block = `think-body-0 [ \\t\\r\\n]{0,4}`;
    lines.push(
      think.startInThinking
        ? `root ::= ${block} tool-calls`
        : `root ::= (${gbnfLiteral(think.open)} ${block})? tool-calls`,
    );
  } else {
    lines.push('root ::= tool-calls');
  }
  const seq = (...items: string[]) => items.filter((s) => s !== '').join(' ');
  const lit = (s: string) => (s === '' ? '' : gbnfLiteral(s));
  const open = lit(syntax.open);
  const close = lit(syntax.close);
  if (syntax.family === 'tagged') {
    lines.push(options.parallel ? 'tool-calls ::= tool-call ("\\n" tool-call)*' : 'tool-calls ::= tool-call');
    lines.push(`tool-call ::= ${seq(open, 'tool-call-object', close)}`);
  } else if (syntax.family === 'list') {
    const more = options.parallel ? '(", " tool-call-object)*' : '';
    lines.push(`tool-calls ::= ${seq(open, 'tool-call-object', more, close)}`);
  } else {
    lines.push('tool-calls ::= tool-call-object');
  }
  lines.push(`tool-call-object ::= ${callable.map((_, i) => `tool${i}`).join(' | ')}`);
  const argumentRules: string[] = [];
  callable.forEach((tool, i) => {
    const parts = syntax.object.map((p) =>
      typeof p === 'string'
        ? gbnfLiteral(p)
        : p.slot === 'name'
          ? gbnfLiteral(JSON.stringify(tool.name))
          : `args${i}-root`,
    );
    lines.push(`tool${i} ::= ${parts.join(' ')}`);
    let grammar: string;
    try {
      grammar = toGrammar(JSON.stringify(argumentsSchema(tool.parameters)));
    } catch (err) {
      throw new ToolSchemaError(tool.name, err);
    }
    argumentRules.push(prefixRules(grammar.trim(), `args${i}-`));
  });
  if (think) lines.push(...untilRules('think-body', think.close));
  return `${[...lines, ...argumentRules].join('\n')}\n`;
}
