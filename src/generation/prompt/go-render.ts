import { DaemonError, InternalError, InvalidRequestError } from '../../common/errors';
import { ChatMessage, ToolDefinition } from '../generation.types';
import { RenderedOutputParser } from '../output';
import { Runner } from '../../runner';
import { afterThinkingTrigger, JSON_OBJECT_GRAMMAR } from './format';
import { formatGrammar, GrammarBudget } from './grammar-budget';
import {
  GoTemplateHandle,
  GoTemplatesApi,
  GoTemplateValues,
  templateErrorMessage,
  thinkingTags,
} from './go-template.port';
import { PreparedPrompt, RenderedPrompt } from './prompt.types';
import { GoRenderOptions, thinkLevel } from './render-options';

/**
 * Rendered mode (reference/ollama-api.md §8.1, §8.2): a Go template (Modelfile TEMPLATE or request `template`)
 * rendered by the Go-template engine, with Ollama's output parsing and the grammar that forces a tool call.
 */

/** The grammars of a rendered-mode request, converted once per request ({@link goGrammars}) for all its renders. */
export interface GoGrammars {
  /** The `format` grammar. */
  format?: string;
  /** With `toolChoice: 'required'`: each tool's arguments schema (JSON text) → its grammar, or why it failed. */
  toolArgs?: Map<string, string | Error>;
}

/** A conversion the converter rejected (kept per schema, reported by the forced grammar naming the tool). */
class ConversionFailed extends Error {
  constructor(readonly failure: unknown) {
    super((failure as Error)?.message ?? String(failure));
  }
}

/**
 * Converts what a rendered-mode request needs besides its messages, once per request, off the JS thread and within
 * the request's grammar budget: the `format` grammar, else (with `toolChoice: 'required'` and tools) the arguments
 * grammar of each tool that the forced-call grammar uses (the schema texts buildToolCallGrammar asks for).
 * @throws InvalidRequestError `invalid JSON schema in format: …` or a budget limit (400); RequestCancelledError.
 */
export async function goGrammars(
  api: GoTemplatesApi,
  template: GoTemplateHandle,
  runner: Runner,
  opts: GoRenderOptions,
  budget: GrammarBudget,
  signal?: AbortSignal,
): Promise<GoGrammars> {
  if (opts.format) return { format: await formatGrammar(opts.format, budget, runner, signal) };
  if (opts.toolChoice !== 'required' || !opts.tools || opts.tools.length === 0) return {};
  const schemas: string[] = [];
  api.buildToolCallGrammar(api.inferToolCallSyntax(template), opts.tools, (schema) => {
    schemas.push(schema);
    return 'root ::= ""';
  });
  const toolArgs = new Map<string, string | Error>();
  for (const schema of new Set(schemas)) {
    try {
      toolArgs.set(schema, await budget.convert(runner, schema, 'tools', signal, (err) => new ConversionFailed(err)));
    } catch (err) {
      if (!(err instanceof ConversionFailed)) throw err;
      toolArgs.set(schema, err.failure instanceof Error ? err.failure : err);
    }
  }
  return { toolArgs };
}

/**
 * The grammar that forces a tool call in rendered mode (beyond Ollama, which ignores `tool_choice`): only the
 * template's own tool-call syntax (inferToolCallSyntax, §8.5) with each tool's arguments following its JSON Schema
 * (the grammars {@link goGrammars} converted), applied from the first generated token. With thinking on, the
 * thinking block is admitted first (up to the close tag), as llama.cpp's own required-call grammar admits the
 * reasoning block in native mode: turning thinking off instead would change the prompt the model was trained on and
 * ignore an explicit `think`. One call (as native mode, see singleCallGrammar): ChatCommand carries no parallel
 * flag, so OpenAI `parallel_tool_calls` / Anthropic `disable_parallel_tool_use` do not change it. Returns the grammar
 * and the tokens to emit as text (the pieces of the call's opening and closing text, e.g. `<tool_call>`,
 * `[TOOL_CALLS]`), or undefined when no tool has a name.
 * @throws InvalidRequestError `invalid JSON schema in the parameters of tool "<name>": …` (400).
 */
function forcedToolCallGrammar(
  api: GoTemplatesApi,
  template: GoTemplateHandle,
  tools: ToolDefinition[],
  toolArgs: Map<string, string | Error>,
  thinking: { open: string; close: string; startInThinking: boolean } | undefined,
): { grammar: string; preservedTokens: string[] } | undefined {
  const syntax = api.inferToolCallSyntax(template);
  const lookup = (schema: string): string => {
    const grammar = toolArgs.get(schema);
    if (grammar instanceof Error) throw grammar;
    if (grammar === undefined) throw new InternalError('the tool schema was not converted');
    return grammar;
  };
  let grammar: string | undefined;
  try {
    grammar = api.buildToolCallGrammar(syntax, tools, lookup, { ...(thinking ? { thinking } : {}) });
  } catch (err) {
    throw new InvalidRequestError((err as Error).message, 'tools', { cause: err });
  }
  if (!grammar) return undefined;
  const pieces = [syntax.tag, ...`${syntax.open} ${syntax.close}`.split(/\s+/)];
  const preservedTokens = [...new Set(pieces.filter((p) => p !== '' && !['{', '[', ']'].includes(p)))];
  return { grammar, preservedTokens };
}

/** The values a Go template is rendered with (§8.2) for `messages` and the request's options. */
function goValues(messages: ChatMessage[], opts: GoRenderOptions): GoTemplateValues {
  return {
    messages,
    ...(opts.tools ? { tools: opts.tools } : {}),
    think: opts.thinking,
    thinkLevel: opts.thinking ? thinkLevel(opts.think === undefined ? true : opts.think) : '',
    isThinkSet: opts.think !== undefined,
    ...(opts.fim ? { prompt: opts.fim.prompt, suffix: opts.fim.suffix } : {}),
  };
}

/**
 * The prompt text of a Go-template render (rendered mode, §8.1/§8.2) and nothing else: what the fitting search
 * measures. The engine's renderPrompt runs under an execution budget sized to the conversation
 * (src/templates/template-budget.ts), so a template cannot hold the event loop for long; the stage itself uses
 * {@link renderGoTextAsync}, which moves large and long renders off the event loop.
 * @throws InvalidRequestError `template error: …` when the template fails, `template: execution budget exceeded: …`
 *   when it runs past its budget.
 */
export function renderGoText(
  api: GoTemplatesApi,
  template: GoTemplateHandle,
  messages: ChatMessage[],
  opts: GoRenderOptions,
): string {
  try {
    return api.renderPrompt(template, goValues(messages, opts));
  } catch (err) {
    throw new InvalidRequestError(templateErrorMessage(err), 'template', { cause: err });
  }
}

/**
 * {@link renderGoText} without holding the event loop: the engine's renderPromptAsync renders small inputs inline
 * under a small budget and everything else in a worker thread (src/templates/render-pool.ts; docs/architecture.md
 * "The prompt stage"), with the same text and the same errors; an engine without it renders inline.
 * @param signal the request's: a render waiting for or running in a worker is stopped when it fires.
 * @throws InvalidRequestError as renderGoText; RequestCancelledError when `signal` fired; InternalError when the
 *   render worker failed.
 */
export async function renderGoTextAsync(
  api: GoTemplatesApi,
  template: GoTemplateHandle,
  messages: ChatMessage[],
  opts: GoRenderOptions,
  signal?: AbortSignal,
): Promise<string> {
  if (!api.renderPromptAsync) return renderGoText(api, template, messages, opts);
  try {
    return await api.renderPromptAsync(template, goValues(messages, opts), signal);
  } catch (err) {
    if (err instanceof DaemonError) throw err; // RequestCancelledError, InternalError: not the template's fault
    throw new InvalidRequestError(templateErrorMessage(err), 'template', { cause: err });
  }
}

/**
 * Renders with a Go template (rendered mode, §8.1/§8.2) and sets up Ollama's own output parsing: thinking split with
 * the tags inferred from the template (starting inside thinking when the prompt ends with the open tag), tool calls
 * with the template's tool-call tag. `format` → its grammar (grammars.format); with thinking on it is applied lazily
 * after the close tag. Otherwise `toolChoice: 'required'` with tools → the forced-call grammar
 * (forcedToolCallGrammar over grammars.toolArgs), non-lazy. Synchronous: every conversion was done by goGrammars.
 * @param text the prompt text when the caller already rendered these messages (renderGoText / renderGoTextAsync, as
 *   the prompt stage always does), else rendered here (inline).
 * @throws InvalidRequestError `template error: …` when the template fails; a tool schema that cannot be converted.
 */
export function renderGo(
  api: GoTemplatesApi,
  template: GoTemplateHandle,
  messages: ChatMessage[],
  opts: GoRenderOptions,
  grammars: GoGrammars,
  text: string = renderGoText(api, template, messages, opts),
): RenderedPrompt {
  const tags = opts.thinking ? thinkingTags(api, template) : undefined;
  const startInThinking = tags ? text.trimEnd().endsWith(tags.open) : false;
  const thinkingParser = tags ? new api.ThinkingParser(tags.open, tags.close, startInThinking) : undefined;
  const toolParser = opts.tools && opts.tools.length > 0 ? new api.ToolCallParser(template, opts.tools) : undefined;
  const tag = toolParser?.tag;
  const prompt: Omit<PreparedPrompt, 'tokens'> = {
    ...(thinkingParser || toolParser ? { parser: new RenderedOutputParser(thinkingParser, toolParser) } : {}),
    // Ollama passes the tool-call tag as a preserved token so a control token like <tool_call> arrives as text (§8.5).
    ...(tag && tag !== '{' && tag !== '[' ? { preservedTokens: [tag] } : {}),
  };
  if (opts.format) {
    const grammar = grammars.format ?? JSON_OBJECT_GRAMMAR;
    if (tags) {
      return {
        text,
        prompt: { ...prompt, grammar, grammarLazy: true, grammarTriggers: [afterThinkingTrigger(tags.close)] },
      };
    }
    return { text, prompt: { ...prompt, grammar } };
  }
  if (opts.toolChoice === 'required' && opts.tools && opts.tools.length > 0) {
    const forced = forcedToolCallGrammar(
      api,
      template,
      opts.tools,
      grammars.toolArgs ?? new Map(),
      tags && { ...tags, startInThinking },
    );
    if (forced) return { text, prompt: { ...prompt, ...forced } };
  }
  return { text, prompt };
}

/**
 * The parsed Go template a request uses (request `template` over the Modelfile TEMPLATE), or undefined when there is
 * none or the engine is not available (native mode then).
 * @param api the engine (the TEMPLATE_RENDERER's); default: src/templates, or the one set for tests.
 * @throws InvalidRequestError `template error: …` when the template does not parse.
 */
export function goTemplateFor(
  text: string | undefined,
  api: GoTemplatesApi | undefined,
): { api: GoTemplatesApi; template: GoTemplateHandle } | undefined {
  if (!text) return undefined;
  if (!api) return undefined;
  try {
    return { api, template: api.GoTemplate.parse(text) };
  } catch (err) {
    throw new InvalidRequestError(`template error: ${(err as Error).message}`, 'template', { cause: err });
  }
}
