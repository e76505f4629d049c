/** Token logprobs from the engine's events to the runner's shape (OpenAI `logprobs`, Ollama `logprobs`). */
import type { NativeEvent, NativeTokenLogprob } from '../../binding';
import { RunnerLogprob, RunnerTokenLogprob } from './runner';

const utf8 = new TextDecoder('utf-8', { fatal: false });

/** A native logprob entry → the runner's (text decoded lossily, bytes as a plain array). */
function toTokenLogprob(entry: NativeTokenLogprob): RunnerTokenLogprob {
  return { token: utf8.decode(entry.bytes), logprob: entry.logprob, bytes: Array.from(entry.bytes) };
}

/** The logprob of a token event, when the task asked for them. */
export function eventLogprob(event: Extract<NativeEvent, { type: 'token' }>): RunnerLogprob | undefined {
  if (event.logprob === undefined || event.bytes === undefined) return undefined;
  return {
    ...toTokenLogprob({ token: event.token, bytes: event.bytes, logprob: event.logprob }),
    topLogprobs: (event.topLogprobs ?? []).map(toTokenLogprob),
  };
}
