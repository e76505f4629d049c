import { InvalidRequestError } from '../../common/errors';
import { ResolvedModel } from '../../models';
import type { ChatMessage } from '../generation.types';

/**
 * Audio in prompts (issue 38): `audio` entries (base64 audio files) travel to the engine like images — one media
 * marker each, numbered with the images as `[img-N]` (a message's images first, then its audio), the bytes in the
 * task's `images` list, where llama.cpp mtmd sniffs and decodes them (WAV, MP3, FLAC). Here: the checks before any of
 * that, so a bad request is a clear 400 before a model is loaded.
 */

/** The refusal for audio sent to a model without an audio encoder (Ollama's image wording, for audio). */
export const NO_AUDIO_MESSAGE = 'this model is missing data required for audio input';

/** The audio containers the engine decodes (mtmd-helper's sniffing + miniaudio), as the compat layers name them. */
export const AUDIO_FORMATS = ['wav', 'mp3', 'flac'] as const;

/** One of {@link AUDIO_FORMATS}. */
export type AudioFormat = (typeof AUDIO_FORMATS)[number];

/**
 * The container of an audio file from its first bytes, as mtmd_helper_bitmap_init_from_buf sniffs it: `RIFF….WAVE`
 * (WAV), `ID3` or an MPEG frame sync 0xFF 0xE0-mask (MP3), `fLaC` (FLAC); undefined for anything else.
 * @param head at least the file's first 12 bytes (fewer: only what they can prove)
 */
export function sniffAudio(head: Uint8Array): AudioFormat | undefined {
  const ascii = (from: number, text: string) =>
    head.length >= from + text.length && [...text].every((c, i) => head[from + i] === c.charCodeAt(0));
  if (ascii(0, 'RIFF') && ascii(8, 'WAVE')) return 'wav';
  if (ascii(0, 'fLaC')) return 'flac';
  if (ascii(0, 'ID3') || (head.length >= 2 && head[0] === 0xff && (head[1] & 0xe0) === 0xe0)) return 'mp3';
  return undefined;
}

/**
 * Whether `b64` is well-formed standard base64 (RFC 4648 §4, padded; CR/LF ignored, as Go's decoder does). Buffer's
 * own decoder skips bad characters silently, which would hand the engine different bytes than were sent.
 */
export function isBase64(b64: string): boolean {
  const s = b64.includes('\n') || b64.includes('\r') ? b64.replace(/[\r\n]/g, '') : b64;
  if (s.length % 4 !== 0 || /[^A-Za-z0-9+/=]/.test(s)) return false;
  const pad = s.indexOf('=');
  return pad < 0 || (pad >= s.length - 2 && /^=+$/.test(s.slice(pad)));
}

/**
 * Checks one base64 audio entry: non-empty, valid base64, and bytes that sniff as WAV, MP3 or FLAC (the rest of the
 * file is decoded by the engine, which refuses a truncated or corrupt one with a 400 of its own).
 * @param where how the error names the entry, e.g. `audio[0]`
 * @throws InvalidRequestError `<where> is empty`, `<where> is not valid base64`, or
 *   `<where> is not a WAV, MP3 or FLAC file`.
 */
export function checkAudioData(b64: string, where: string, param = 'audio'): void {
  if (b64.length === 0) throw new InvalidRequestError(`${where} is empty`, param);
  if (!isBase64(b64)) throw new InvalidRequestError(`${where} is not valid base64`, param);
  const head = Buffer.from(b64.slice(0, 24).replace(/[\r\n]/g, ''), 'base64');
  if (head.length === 0) throw new InvalidRequestError(`${where} is empty`, param);
  if (!sniffAudio(head)) {
    throw new InvalidRequestError(`${where} is not a WAV, MP3 or FLAC file (unrecognised audio data)`, param);
  }
}

/**
 * The audio checks of a request, before the model is loaded: any audio to a model without the `audio` capability
 * is the {@link NO_AUDIO_MESSAGE} 400 (Ollama's vision refusal worded for audio); then every entry must pass
 * {@link checkAudioData}.
 * @param audio the request's audio entries (base64), in request order
 * @throws InvalidRequestError as described.
 */
export function checkAudio(model: ResolvedModel, audio: readonly string[]): void {
  if (audio.length === 0) return;
  if (!model.capabilities.includes('audio')) throw new InvalidRequestError(NO_AUDIO_MESSAGE, 'audio');
  audio.forEach((b64, i) => checkAudioData(b64, `audio[${i}]`));
}

/** Every audio entry of `messages`, in message order. */
export function messagesAudio(messages: readonly ChatMessage[]): string[] {
  return messages.flatMap((m) => m.audio ?? []);
}

/**
 * The messages as the renderers see them: a message's audio appended to its `images` (so templates, which know only
 * Ollama's `.Images`, and the `[img-N]` numbering cover both, images first) and `audio` dropped. Messages without
 * audio are returned as is.
 */
export function foldAudio(messages: readonly ChatMessage[]): ChatMessage[] {
  return messages.map((m) => {
    if (!m.audio || m.audio.length === 0) return m;
    const { audio, ...rest } = m;
    return { ...rest, images: [...(m.images ?? []), ...audio] };
  });
}
