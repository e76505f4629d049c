import { InvalidRequestError } from '../../common/errors';
import { ChatMessage, ToolDefinition } from '../generation.types';
import { RenderedOutputParser } from '../output';
import { Runner } from '../../runner';
import { afterThinkingTrigger, boundedToGrammar, formatGrammar } from './format';
import { GoTemplateHandle, GoTemplatesApi, templateErrorMessage, thinkingTags } from './go-template.port';
import { PreparedPrompt, RenderedPrompt } from './prompt.types';
import { GoRenderOptions, thinkLevel } from './render-options';

/**
 * Rendered mode (reference/ollama-api.md §8.1, §8.2): a Go template (Modelfile TEMPLATE or request `template`)
 * rendered by the Go-template engine, with Ollama's output parsing and the grammar that forces a tool call.
 */

/**
 * The grammar that forces a tool call in rendered mode (beyond Ollama, which ignores `tool_choice`): only the
 * template's own tool-call syntax (inferToolCallSyntax, §8.5) with each tool's arguments following its JSON Schema
 * (llama.cpp json_schema_to_grammar through the runner), applied from the first generated token. With thinking on,
 * the thinking block is admitted first (up to the close tag), as llama.cpp's own required-call grammar admits the
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
  runner: Runner,
  tools: ToolDefinition[],
  thinking: { open: string; close: string; startInThinking: boolean } | undefined,
): { grammar: string; preservedTokens: string[] } | undefined {
  const syntax = api.inferToolCallSyntax(template);
  let grammar: string | undefined;
  try {
    grammar = api.buildToolCallGrammar(
      syntax,
      tools,
      boundedToGrammar((s) => runner.jsonSchemaToGrammar(s), 'tools'),
      {
        ...(thinking ? { thinking } : {}),
      },
    );
  } catch (err) {
    throw new InvalidRequestError((err as Error).message, 'tools', { cause: err });
  }
  if (!grammar) return undefined;
  const pieces = [syntax.tag, ...`${syntax.open} ${syntax.close}`.split(/\s+/)];
  const preservedTokens = [...new Set(pieces.filter((p) => p !== '' && !['{', '[', ']'].includes(p)))];
  return { grammar, preservedTokens };
}

/**
 * Renders with a Go template (rendered mode, §8.1/§8.2) and sets up Ollama's own output parsing: thinking split with
 * the tags inferred from the template (starting inside thinking when the prompt ends with the open tag), tool calls
 * with the template's tool-call tag. `format` → a grammar; with thinking on it is applied lazily after the close tag.
 * Otherwise `toolChoice: 'required'` with tools → the forced-call grammar (forcedToolCallGrammar), non-lazy.
 * The engine's renderPrompt runs under an execution budget sized to the conversation (src/templates/
 * template-budget.ts), so a template cannot hold the event loop.
 * @throws InvalidRequestError `template error: …` when the template fails, `template: execution budget exceeded: …`
 *   when it runs past its budget; a tool schema that cannot be converted.
 */
export function renderGo(
  api: GoTemplatesApi,
  template: GoTemplateHandle,
  runner: Runner,
  messages: ChatMessage[],
  opts: GoRenderOptions,
): RenderedPrompt {
  let text: string;
  try {
    text = api.renderPrompt(template, {
      messages,
      ...(opts.tools ? { tools: opts.tools } : {}),
      think: opts.thinking,
      thinkLevel: opts.thinking ? thinkLevel(opts.think === undefined ? true : opts.think) : '',
      isThinkSet: opts.think !== undefined,
      ...(opts.fim ? { prompt: opts.fim.prompt, suffix: opts.fim.suffix } : {}),
    });
  } catch (err) {
    throw new InvalidRequestError(templateErrorMessage(err), 'template', { cause: err });
  }
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
    const grammar = formatGrammar(opts.format, (s) => runner.jsonSchemaToGrammar(s));
    if (tags) {
      return {
        text,
        prompt: { ...prompt, grammar, grammarLazy: true, grammarTriggers: [afterThinkingTrigger(tags.close)] },
      };
    }
    return { text, prompt: { ...prompt, grammar } };
  }
  if (opts.toolChoice === 'required' && opts.tools && opts.tools.length > 0) {
    const forced = forcedToolCallGrammar(api, template, runner, opts.tools, tags && { ...tags, startInThinking });
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
