import type { NativeChatRequestMessage, NativeChatTool } from '../../../binding';
import { ChatMessage, ToolDefinition } from '../generation.types';
import { NativeOutputParser } from '../output';
import { Runner, RunnerChatRender, RunnerChatRequest } from '../../runner';
import { afterThinkingTrigger, formatGrammar } from './format';
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

/** Wire tool definitions → common/chat tools (parameters as JSON Schema text). */
export function toNativeTools(tools: ToolDefinition[] | undefined): NativeChatTool[] | undefined {
  if (!tools || tools.length === 0) return undefined;
  return tools.map((t) => ({
    name: t.function?.name ?? '',
    description: t.function?.description ?? '',
    parameters: JSON.stringify(t.function?.parameters ?? { type: 'object', properties: {} }),
  }));
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
): Promise<RenderedPrompt> {
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
