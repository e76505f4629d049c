import type { NativeChatRequestMessage, NativeChatTool } from '../../../binding';
import { ChatMessage, ToolDefinition } from '../generation.types';
import { NativeOutputParser } from '../output';
import { Runner, RunnerChatRender, RunnerChatRequest } from '../../runner';
import { afterThinkingTrigger, JSON_OBJECT_GRAMMAR } from './format';
import { formatGrammar, GrammarBudget, toolSchemaText } from './grammar-budget';
import { PreparedPrompt, RenderedPrompt } from './prompt.types';
import { NativeRenderOptions, thinkLevel } from './render-options';

/**
 * Native mode (reference/ollama-api.md §8.1): the GGUF Jinja template rendered by llama.cpp common/chat through the
 * runner, with the domain → common/chat conversions of messages and tools.
 */

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

/**
 * Wire tool definitions → common/chat tools (parameters as JSON Schema text).
 * @param schemas the parameters' JSON texts when already computed (GrammarBudget.toolSchemas), in the same order.
 */
export function toNativeTools(tools: ToolDefinition[] | undefined, schemas?: string[]): NativeChatTool[] | undefined {
  if (!tools || tools.length === 0) return undefined;
  return tools.map((t, i) => ({
    name: t.function?.name ?? '',
    description: t.function?.description ?? '',
    parameters: schemas?.[i] ?? toolSchemaText(t),
  }));
}

/** What a native-mode request needs besides its messages, computed once per request ({@link nativeGrammars}). */
export interface NativePrepared {
  /** The request's tools as common/chat tools. */
  tools?: NativeChatTool[];
  /** The `format` grammar. */
  format?: string;
}

/**
 * Converts what a native-mode request needs besides its messages, once per request: the common/chat tools (schema
 * texts of the budget) and the `format` grammar (off the JS thread, within the request's grammar budget).
 * @throws InvalidRequestError `invalid JSON schema in format: …` or a budget limit (400); RequestCancelledError.
 */
export async function nativeGrammars(
  runner: Runner,
  opts: NativeRenderOptions,
  budget: GrammarBudget,
  signal?: AbortSignal,
): Promise<NativePrepared> {
  const tools = toNativeTools(opts.tools, budget.toolSchemas);
  if (!opts.format) return tools ? { tools } : {};
  return { ...(tools ? { tools } : {}), format: await formatGrammar(opts.format, budget, runner, signal) };
}

/** The common/chat request of a native render. */
function nativeRequest(
  messages: ChatMessage[],
  opts: NativeRenderOptions,
  tools?: NativeChatTool[],
): RunnerChatRequest {
  const level = thinkLevel(opts.think);
  return {
    messages: toNativeMessages(messages),
    tools,
    ...(opts.toolChoice && tools?.length ? { toolChoice: opts.toolChoice } : {}),
    enableThinking: opts.thinking,
    addGenerationPrompt: true,
    templateKwargs: {
      enable_thinking: JSON.stringify(opts.thinking),
      ...(typeof opts.think === 'string' ? { reasoning_effort: JSON.stringify(level) } : {}),
    },
  };
}

/**
 * The prompt text of a native render and nothing else: what the fitting search measures. The tools are rendered into
 * the prompt as in the full render, but with `toolChoice: 'none'` so that common/chat builds no tool-call grammar
 * (it only changes the grammar and the output parser, not the prompt; the full render's text is tokenized again when
 * it differs).
 * @throws InvalidRequestError `template error: …` (the runner's renderChat).
 */
export async function renderNativeText(
  runner: Runner,
  messages: ChatMessage[],
  opts: NativeRenderOptions,
  prepared: NativePrepared,
): Promise<string> {
  const request = nativeRequest(messages, opts, prepared.tools);
  return (await runner.renderChat(prepared.tools?.length ? { ...request, toolChoice: 'none' } : request)).prompt;
}

/**
 * Renders messages in native mode (§8.1: the GGUF Jinja template through llama.cpp common/chat) into the prompt text
 * and everything but the tokens of a PreparedPrompt: the render's grammar (lazy tool-call grammar) or the `format`
 * grammar, stops, preserved tokens and the render's output parser. With thinking on, a format grammar is applied
 * lazily from the end of the thinking block (pattern trigger after `</think>`) instead of Ollama's two phases (§9).
 * With `toolChoice: 'required'` the render's non-lazy grammar forces one call that starts right away: its opening
 * ends the prompt (requiredCallOpening, one more render with `auto` to learn it) and only one call is admitted
 * (singleCallGrammar). The tool-call grammar llama.cpp built is charged to the request's grammar budget.
 * The Jinja rendering runs off the JS thread (Runner.renderChat).
 * @param prepared the request's tools and format grammar ({@link nativeGrammars}).
 * @throws InvalidRequestError `template error: …` (the runner's renderChat), a grammar budget limit (400).
 */
export async function renderNative(
  runner: Runner,
  messages: ChatMessage[],
  opts: NativeRenderOptions,
  prepared: NativePrepared,
  budget?: GrammarBudget,
): Promise<RenderedPrompt> {
  const request = nativeRequest(messages, opts, prepared.tools);
  const render = await runner.renderChat(request);
  const base: Omit<PreparedPrompt, 'tokens'> = {
    stops: render.additionalStops,
    preservedTokens: render.preservedTokens,
    parser: new NativeOutputParser(render.parser),
  };
  if (opts.format) {
    const grammar = prepared.format ?? JSON_OBJECT_GRAMMAR;
    if (render.thinking) {
      return {
        text: render.prompt,
        prompt: { ...base, grammar, grammarLazy: true, grammarTriggers: [afterThinkingTrigger('</think>')] },
      };
    }
    return { text: render.prompt, prompt: { ...base, grammar } };
  }
  if (render.grammar) {
    budget?.chargeRender(render.grammar, 'tools');
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
