import { InvalidRequestError } from '../../common/errors';
import { AUDIO_FORMATS, checkAudioData } from '../../generation';

/**
 * The `input_audio` content part of the OpenAI dialects: chat `{"type":"input_audio","input_audio":{"data":"<base64>",
 * "format":"wav"|"mp3"}}` (reference/shared-service.md §6, openai `ChatCompletionContentPartInputAudio`) and the
 * Responses API's `ResponseInputAudio` of the same shape. `format` names the container; `flac` is accepted too (the
 * engine decodes all three; the bytes decide, as llama-server does). Error texts follow Ollama's compat middleware
 * (reference/ollama-api.md §12, `invalid input_audio format`, `invalid input_audio format: missing data`).
 */

/**
 * An `input_audio` object → its base64 data, checked like every audio entry (checkAudioData: valid base64 whose bytes
 * are WAV, MP3 or FLAC).
 * @param value the part's `input_audio` member
 * @param param the request field the error names (`messages`, `input`)
 * @throws InvalidRequestError `invalid input_audio format` (not an object), `invalid input_audio format: missing data`
 *   (no or empty `data`), `invalid input_audio format: "<f>" (supported: wav, mp3, flac)`, or the checkAudioData
 *   errors naming `input_audio.data`.
 */
export function decodeInputAudio(value: unknown, param: string): string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidRequestError('invalid input_audio format', param);
  }
  const { data, format } = value as { data?: unknown; format?: unknown };
  if (typeof data !== 'string' || data === '') {
    throw new InvalidRequestError('invalid input_audio format: missing data', param);
  }
  if (format !== undefined && format !== null && !AUDIO_FORMATS.some((f) => f === format)) {
    throw new InvalidRequestError(
      `invalid input_audio format: ${JSON.stringify(format)} (supported: ${AUDIO_FORMATS.join(', ')})`,
      param,
    );
  }
  checkAudioData(data, 'input_audio.data', param);
  return data;
}
