import type { NativeChatRequestMessage, NativeChatTool } from '../../binding';
import { InvalidRequestError } from '../common/errors';
import { ResolvedModel } from '../models';
import { PreparedPrompt } from './completion.service';
import { afterThinkingTrigger, formatGrammar } from './format';
import { ChatMessage, OutputFormat, ToolDefinition } from './generation.types';
import { GoTemplateHandle, GoTemplatesApi, loadGoTemplates, thinkingTags } from './go-template.port';
import { NativeOutputParser, RenderedOutputParser } from './output-parser';
import { Runner, RunnerChatRender, RunnerChatRequest } from '../runner';

/**
 * Shared pieces of prompt rendering for generate and chat (reference/ollama-api.md §8): think resolution, image
 * markers, tool/message conversion for the native (Jinja) renderer, and the native render → PreparedPrompt step.
 */

/** Ollama's runner error for images sent to a model without a vision projector (400 here; Ollama: 500). */
export const NO_VISION_MESSAGE = 'this model is missing data required for image input';

/**
 * Whether thinking is on for a request (§4.3): an explicit `think` wins (levels count as on); absent means on for
 * models with the thinking capability.
 */
export function thinkingEnabled(think: boolean | string | undefined, model: ResolvedModel): boolean {
  if (think === undefined) return model.capabilities.includes('thinking');
  return think === true || (typeof think === 'string' && think !== '');
}

/** The level string for templates (`.ThinkLevel`, `reasoning_effort`): `true` ⇒ "medium", false/absent ⇒ "". */
export function thinkLevel(think: boolean | string | undefined): string {
  if (typeof think === 'string') return think;
  return think === true ? 'medium' : '';
}

/** Throws the no-vision error when any image is sent to a model without the vision capability. */
export function checkImages(model: ResolvedModel, imageCount: number): void {
  if (imageCount > 0 && !model.capabilities.includes('vision')) {
    throw new InvalidRequestError(NO_VISION_MESSAGE, 'images');
  }
}

/**
 * Strips `<think>…</think>` blocks from assistant messages before the last user message (§3.3 step 6, applied to
 * every thinking-capable model whose tags are `<think>`/`</think>`).
 */
export function stripEarlierThinking(messages: ChatMessage[]): ChatMessage[] {
  let lastUser = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') lastUser = i;
  });
  return messages.map((m, i) =>
    m.role === 'assistant' && i < lastUser && m.content.includes('</think>')
      ? { ...m, content: m.content.replace(/<think>[\s\S]*?<\/think>\s*/g, '') }
      : m,
  );
}

/** Domain messages → common/chat messages (arguments as JSON text). */
export function toNativeMessages(messages: ChatMessage[]): NativeChatRequestMessage[] {
  return messages.map((m) => ({
    role: m.role,
    content: m.content,
    ...(m.thinking ? { reasoningContent: m.thinking } : {}),
    ...(m.toolCalls
      ? {
          toolCalls: m.toolCalls.map((c) => ({
            ...(c.id ? { id: c.id } : {}),
            name: c.function.name,
            arguments: JSON.stringify(c.function.arguments),
          })),
        }
      : {}),
    ...(m.toolName ? { toolName: m.toolName } : {}),
    ...(m.toolCallId ? { toolCallId: m.toolCallId } : {}),
  }));
}

/** Wire tool definitions → common/chat tools (parameters as JSON Schema text). */
export function toNativeTools(tools: ToolDefinition[] | undefined): NativeChatTool[] | undefined {
  if (!tools || tools.length === 0) return undefined;
  return tools.map((t) => ({
    name: t.function?.name ?? '',
    description: t.function?.description ?? '',
    parameters: JSON.stringify(t.function?.parameters ?? { type: 'object', properties: {} }),
  }));
}

/** What a native render needs besides the messages. */
export interface NativeRenderOptions {
  tools?: ToolDefinition[];
  /**
   * 'required' forces a tool call: native mode through the render's grammar (common_chat tool_choice), rendered mode
   * through forcedToolCallGrammar. A `format` wins over it in both modes.
   */
  toolChoice?: 'auto' | 'required';
  think: boolean | string | undefined;
  thinking: boolean;
  format?: OutputFormat;
}

/**
 * Renders messages in native mode (§8.1: the GGUF Jinja template through llama.cpp common/chat) into the prompt text
 * and everything but the tokens of a PreparedPrompt: the render's grammar (lazy tool-call grammar) or the `format`
 * grammar, stops, preserved tokens and the render's output parser. With thinking on, a format grammar is applied
 * lazily from the end of the thinking block (pattern trigger after `</think>`) instead of Ollama's two phases (§9).
 * With `toolChoice: 'required'` the render's non-lazy grammar forces one call that starts right away: its opening
 * ends the prompt (requiredCallOpening, one more render with `auto` to learn it) and only one call is admitted
 * (singleCallGrammar).
 * The Jinja rendering runs off the JS thread (Runner.renderChat).
 * @throws InvalidRequestError `template error: …` (the runner's renderChat), `invalid JSON schema in format: …`.
 */
export async function renderNative(
  runner: Runner,
  messages: ChatMessage[],
  opts: NativeRenderOptions,
): Promise<{ text: string; prompt: Omit<PreparedPrompt, 'tokens'> }> {
  const level = thinkLevel(opts.think);
  const request: RunnerChatRequest = {
    messages: toNativeMessages(messages),
    tools: toNativeTools(opts.tools),
    ...(opts.toolChoice && opts.tools?.length ? { toolChoice: opts.toolChoice } : {}),
    enableThinking: opts.thinking,
    addGenerationPrompt: true,
    templateKwargs: {
      enable_thinking: JSON.stringify(opts.thinking),
      ...(typeof opts.think === 'string' ? { reasoning_effort: JSON.stringify(level) } : {}),
    },
  };
  const render = await runner.renderChat(request);
  const base: Omit<PreparedPrompt, 'tokens'> = {
    stops: render.additionalStops,
    preservedTokens: render.preservedTokens,
    parser: new NativeOutputParser(render.parser),
  };
  if (opts.format) {
    const grammar = formatGrammar(opts.format, (s) => runner.jsonSchemaToGrammar(s));
    if (render.thinking) {
      return {
        text: render.prompt,
        prompt: { ...base, grammar, grammarLazy: true, grammarTriggers: [afterThinkingTrigger('</think>')] },
      };
    }
    return { text: render.prompt, prompt: { ...base, grammar } };
  }
  if (render.grammar) {
    const opening = await requiredCallOpening(runner, render, request);
    if (opening) {
      // The call's opening is part of the prompt: the model continues inside the call, the grammar (prefilled past
      // it) admits only the rest of a call, and the parser reads the output as if the model had written the opening.
      return {
        text: render.prompt + opening,
        prompt: {
          ...base,
          parser: new NativeOutputParser(render.parser, opening),
          grammar: singleCallGrammar(render.grammar),
          grammarLazy: false,
          grammarTriggers: [],
          grammarPrefill: render.generationPrompt + opening,
        },
      };
    }
    return {
      text: render.prompt,
      prompt: {
        ...base,
        grammar: render.grammar,
        grammarLazy: render.grammarLazy,
        grammarTriggers: render.grammarTriggers,
        ...(!render.grammarLazy && render.generationPrompt ? { grammarPrefill: render.generationPrompt } : {}),
      },
    };
  }
  return { text: render.prompt, prompt: base };
}

/**
 * llama.cpp's required-call grammar with one call only: common/chat wraps per-call formats (Hermes `<tool_call>`) in
 * `tool-calls ::= (tool-call space)+` whatever `parallel_tool_calls` says, so a model that does not stop after its
 * call keeps calling until it runs out of tokens and the last call is cut. One call, as rendered mode's grammar (and
 * llama-server's default `parallel_tool_calls: false`); a grammar without that exact rule is returned as it is.
 */
function singleCallGrammar(grammar: string): string {
  return grammar.replace(/^tool-calls ::= \(tool-call space\)\+$/m, 'tool-calls ::= tool-call space');
}

/**
 * The text that opens a tool call in a native render with `toolChoice: 'required'`, to be put at the end of the
 * prompt so the call starts at the first generated token; undefined to keep llama.cpp's required-call grammar as it
 * is. That grammar (common/chat, reference native-core.md) admits free text before the first call, so a model that
 * does not head for a call writes text until it runs out of tokens; OpenAI's `required` (and Anthropic's `any`/named
 * tool) mean a call and nothing else, which is what rendered mode's grammar enforces from the first token. The
 * opening is the trigger word llama.cpp's lazy (`auto`) grammar of the same conversation starts at (`<tool_call>\n`
 * for Hermes/Qwen); used only when the required render is non-lazy, has no thinking block to come first, and its
 * generation prompt ends the prompt.
 */
async function requiredCallOpening(
  runner: Runner,
  render: RunnerChatRender,
  request: RunnerChatRequest,
): Promise<string | undefined> {
  if (request.toolChoice !== 'required' || render.grammarLazy || render.thinking) return undefined;
  if (!render.generationPrompt || !render.prompt.endsWith(render.generationPrompt)) return undefined;
  const auto = await runner.renderChat({ ...request, toolChoice: 'auto' });
  if (!auto.grammarLazy || auto.prompt !== render.prompt) return undefined;
  const words = auto.grammarTriggers.filter((t) => t.type === 'word' && t.value.trim() !== '');
  return words.length === 1 ? words[0].value : undefined;
}

/** What a rendered-mode (Go template) render needs besides the messages. */
export interface GoRenderOptions extends NativeRenderOptions {
  /** Fill-in-the-middle: `.Prompt` / `.Suffix` (generate with `suffix`). */
  fim?: { prompt: string; suffix: string };
}

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
    grammar = api.buildToolCallGrammar(syntax, tools, (s) => runner.jsonSchemaToGrammar(s), {
      ...(thinking ? { thinking } : {}),
    });
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
 * @throws InvalidRequestError `template error: …` when the template fails; a tool schema that cannot be converted.
 */
export function renderGo(
  api: GoTemplatesApi,
  template: GoTemplateHandle,
  runner: Runner,
  messages: ChatMessage[],
  opts: GoRenderOptions,
): { text: string; prompt: Omit<PreparedPrompt, 'tokens'> } {
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
    throw new InvalidRequestError(`template error: ${(err as Error).message}`, 'template', { cause: err });
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
  api: GoTemplatesApi | undefined = loadGoTemplates(),
): { api: GoTemplatesApi; template: GoTemplateHandle } | undefined {
  if (!text) return undefined;
  if (!api) return undefined;
  try {
    return { api, template: api.GoTemplate.parse(text) };
  } catch (err) {
    throw new InvalidRequestError(`template error: ${(err as Error).message}`, 'template', { cause: err });
  }
}
