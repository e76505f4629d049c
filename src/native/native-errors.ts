import type { NativeErrorCode } from '../../binding';
import {
  ContextLengthExceededError,
  DaemonError,
  InsufficientMemoryError,
  InternalError,
  InvalidRequestError,
  ModelLoadError,
  RequestCancelledError,
} from '../common/errors';

/** Ollama's text for a prompt that cannot fit the context (reference/ollama-api.md §5.2). */
export const PROMPT_TOO_LONG_MESSAGE =
  'the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the ' +
  'context length in settings, or use a model with a longer context length';

/** Whether a thrown value carries one of the addon's `LLAMA_*` codes. */
export function isNativeError(err: unknown): err is { code: NativeErrorCode; message: string } {
  return (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as { code?: unknown }).code === 'string' &&
    (err as { code: string }).code.startsWith('LLAMA_')
  );
}

/**
 * Maps a native error (an Error with `code`, or an `error` event's code + message) to a domain error
 * (ARCHITECTURE.md §6 "Errors": the TS wrapper maps each code to a domain error class). Exhaustive over
 * NativeErrorCode; anything without a LLAMA_ code becomes an InternalError.
 */
export function mapNativeError(err: unknown): DaemonError {
  if (err instanceof DaemonError) return err;
  if (!isNativeError(err)) {
    const message = err instanceof Error ? err.message : String(err);
    return new InternalError(message || 'internal error', { cause: err });
  }
  const message = err.message;
  const code: NativeErrorCode = err.code;
  switch (code) {
    case 'LLAMA_MODEL_LOAD_FAILED':
    case 'LLAMA_CONTEXT_CREATE_FAILED':
      return new ModelLoadError(message, { cause: err });
    case 'LLAMA_EXCEED_CONTEXT':
      return new ContextLengthExceededError(PROMPT_TOO_LONG_MESSAGE);
    case 'LLAMA_DECODE_FAILED':
      return new InternalError(`an error was encountered while running the model: ${message}`, { cause: err });
    case 'LLAMA_OOM':
      return new InsufficientMemoryError(message, { cause: err });
    case 'LLAMA_INVALID_ARGUMENT':
      return new InvalidRequestError(message);
    case 'LLAMA_TEMPLATE_FAILED':
      return new InvalidRequestError(`template error: ${message}`);
    case 'LLAMA_CANCELLED':
      return new RequestCancelledError();
    case 'LLAMA_DISPOSED':
      return new InternalError(`model was unloaded while in use: ${message}`, { cause: err });
    case 'LLAMA_QUANTIZE_FAILED':
    case 'LLAMA_INTERNAL':
      return new InternalError(message, { cause: err });
    default: {
      const unknown: never = code;
      return new InternalError(`${String(unknown)}: ${message}`, { cause: err });
    }
  }
}
