import { ResolvedModel } from '../../models';
import { OutputFormat, ToolDefinition } from '../generation.types';

/**
 * What a render is asked for besides the messages (reference/ollama-api.md §8): tools and tool choice, thinking
 * (resolved from `think` and the model's capabilities, §4.3) and `format` (§9), in native and rendered mode.
 */

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

/** What a rendered-mode (Go template) render needs besides the messages. */
export interface GoRenderOptions extends NativeRenderOptions {
  /** Fill-in-the-middle: `.Prompt` / `.Suffix` (generate with `suffix`). */
  fim?: { prompt: string; suffix: string };
}
