import type { NativeGrammarTrigger } from '../../../binding';
import { ChatCommand, GenerateCommand } from '../generation.types';
import { OutputParser } from '../output';
import { MediaPrompt } from './media';

/** Prompt tokens ready to submit, with what the render asks of sampling and output parsing. */
export interface PreparedPrompt {
  /** Token ids, shorter than the slot context. */
  tokens: number[];
  /** GBNF grammar (format or tool calls); lazy ones only apply after a trigger. */
  grammar?: string;
  grammarLazy?: boolean;
  grammarTriggers?: NativeGrammarTrigger[];
  preservedTokens?: string[];
  /** Text the prompt ends with that a non-lazy render grammar must consume first (NativeChatRender.generationPrompt). */
  grammarPrefill?: string;
  /** Stop strings added by the template (besides the `stop` option). */
  stops?: string[];
  /** Splits the output into content / thinking / tool calls; absent = everything is content. */
  parser?: OutputParser;
  /** The prompt as text with media markers plus the images, when the request has images (`tokens` then only count). */
  media?: MediaPrompt;
}

/** One render (native or rendered mode): the prompt text, and everything of a PreparedPrompt but the tokens. */
export interface RenderedPrompt {
  text: string;
  prompt: Omit<PreparedPrompt, 'tokens'>;
}

/**
 * What prompt a completion runs, as data (no callback): a chat or a generate command. The prompt stage turns it into
 * a PreparedPrompt for the runner the completion was given (PromptService.prepare).
 */
export type PromptSource = { kind: 'chat'; cmd: ChatCommand } | { kind: 'generate'; cmd: GenerateCommand };
