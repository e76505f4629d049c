import { ContextLengthExceededError } from '../../common/errors';
import { PROMPT_TOO_LONG_MESSAGE } from '../../native';
import { EffectiveOptions } from '../options';
import { Runner } from '../../runner';

/**
 * Tokenizes a rendered prompt the way llama.cpp's server does (add special tokens, parse control-token text). When
 * the template text already began with the BOS token and the tokenizer added one too, the duplicate is dropped.
 * Tokenizing runs off the JS thread (Runner.tokenize).
 */
export async function tokenizePrompt(runner: Runner, text: string): Promise<number[]> {
  const tokens = await runner.tokenize(text, { addSpecial: true, parseSpecial: true });
  const { addBos, bos } = runner.info;
  if (addBos && bos >= 0 && tokens.length >= 2 && tokens[0] === bos && tokens[1] === bos) tokens.shift();
  return tokens;
}

/**
 * Fits a prompt into a slot's context without failing (reference/ollama-api.md §4.4, llama.cpp server's n_keep
 * truncation): when `tokens.length >= contextSize`, keep the first `numKeep` tokens (plus BOS when the model adds
 * one) and drop whole blocks of half the remaining window after them, so at least about half the window is free
 * for the answer. Shorter prompts are returned unchanged.
 * @param contextSize the slot context, tokens.
 * @returns the tokens to submit (always shorter than contextSize) and how many were dropped.
 */
export function truncatePrompt(
  tokens: number[],
  contextSize: number,
  numKeep: number,
  addBos: boolean,
): { tokens: number[]; dropped: number } {
  if (tokens.length < contextSize) return { tokens, dropped: 0 };
  const keep = Math.max(0, Math.min(numKeep + (addBos ? 1 : 0), Math.floor(contextSize / 2)));
  const left = contextSize - keep;
  const block = Math.max(1, Math.floor(left / 2));
  const erased = Math.ceil((tokens.length - keep - block) / block) * block;
  const out = [...tokens.slice(0, keep), ...tokens.slice(keep + erased)];
  return { tokens: out, dropped: tokens.length - out.length };
}

/**
 * truncatePrompt for a runner and the request's `truncate` flag: with `truncate: false` an over-long prompt is an
 * error instead (§4.4).
 * @throws ContextLengthExceededError Ollama's `the prompt is longer than the context length …` (400).
 */
export function fitPrompt(
  tokens: number[],
  runner: Runner,
  options: EffectiveOptions,
  truncate: boolean | undefined,
): { tokens: number[]; dropped: number } {
  if (truncate === false && tokens.length >= runner.slotContext) {
    throw new ContextLengthExceededError(PROMPT_TOO_LONG_MESSAGE, tokens.length, runner.slotContext);
  }
  return truncatePrompt(tokens, runner.slotContext, options.sampling.numKeep, runner.info.addBos);
}
