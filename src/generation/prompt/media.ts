import { InvalidRequestError } from '../../common/errors';
import { ResolvedModel } from '../../models';
import type { ChatMessage } from '../generation.types';
import { NO_AUDIO_MESSAGE, sniffAudio } from './audio';

/**
 * Images in prompts (reference/ollama-api.md §8.2): Ollama marks each image of a request as `[img-N]` in the
 * rendered prompt (N counts the request's images in message order); the native engine wants llama.cpp mtmd's media
 * marker in the prompt text instead, one per image, with the image bytes in the same order.
 */

/** Ollama's runner error for images sent to a model without a vision projector (400 here; Ollama: 500). */
export const NO_VISION_MESSAGE = 'this model is missing data required for image input';

/**
 * Throws the no-vision error when any image is sent to a model without the vision capability. An `images` entry
 * whose bytes are audio (sniffAudio: WAV, MP3, FLAC) is audio, as Ollama's runner treats it (Ollama's clients send
 * audio in `images`): it needs the `audio` capability instead.
 * @param images the request's `images` entries (base64); only their first bytes are decoded
 * @throws InvalidRequestError {@link NO_VISION_MESSAGE} or NO_AUDIO_MESSAGE (400).
 */
export function checkImages(model: ResolvedModel, images: readonly string[]): void {
  const vision = model.capabilities.includes('vision');
  const audio = model.capabilities.includes('audio');
  if (images.length === 0 || (vision && audio)) return;
  for (const b64 of images) {
    if (!sniffAudio(Buffer.from(b64.slice(0, 24).replace(/[\r\n]/g, ''), 'base64'))) {
      if (!vision) throw new InvalidRequestError(NO_VISION_MESSAGE, 'images');
    } else if (!audio) throw new InvalidRequestError(NO_AUDIO_MESSAGE, 'images');
  }
}

/** mtmd_default_marker(): where an image's embeddings go in a prompt given as text (binding.d.ts NativeTaskParams). */
export const MEDIA_MARKER = '<__media__>';

/** A prompt with images for the runner: text with MEDIA_MARKER once per image, and the encoded image files. */
export interface MediaPrompt {
  /** Prompt text; contains MEDIA_MARKER exactly `images.length` times. */
  prompt: string;
  /** Encoded image files (PNG/JPEG/... bytes), in marker order. */
  images: Uint8Array[];
}

/**
 * Ollama's marker insertion for renderers that do not add `[img-N]` themselves (native mode): each image of a
 * message becomes `[img-N]`, replacing the next `[img]` in its content, else prefixed to the content (server/prompt.go).
 * Returns new message objects; messages without images are returned as is.
 */
export function withImageMarkers(messages: ChatMessage[]): ChatMessage[] {
  let n = 0;
  return messages.map((m) => {
    if (!m.images || m.images.length === 0) return m;
    let prefix = '';
    let content = m.content;
    for (let i = 0; i < m.images.length; i++) {
      const tag = `[img-${n++}]`;
      if (content.includes('[img]')) content = content.replace('[img]', tag);
      else prefix += tag;
    }
    return { ...m, content: prefix + content };
  });
}

/**
 * Turns a rendered prompt with `[img-N]` markers into a MediaPrompt: every `[img-N]` with N < images.length becomes
 * MEDIA_MARKER and contributes images[N] (decoded from base64) at that place; images the prompt never references are
 * put in front of it, so every image sent reaches the model. Returns undefined when `images` is empty.
 * @param text the rendered prompt
 * @param images the request's images, base64 (standard alphabet; invalid characters are skipped by Buffer's decoder,
 *   undecodable image bytes are rejected by the engine with a 400)
 */
export function toMediaPrompt(text: string, images: readonly string[]): MediaPrompt | undefined {
  if (images.length === 0) return undefined;
  const decoded = images.map((b64) => new Uint8Array(Buffer.from(b64, 'base64')));
  const used = new Set<number>();
  const ordered: Uint8Array[] = [];
  const prompt = text.replace(/\[img-(\d+)\]/g, (tag, digits: string) => {
    const n = Number(digits);
    if (n >= decoded.length) return tag;
    used.add(n);
    ordered.push(decoded[n]);
    return MEDIA_MARKER;
  });
  const unused = decoded.filter((_, i) => !used.has(i));
  return { prompt: MEDIA_MARKER.repeat(unused.length) + prompt, images: [...unused, ...ordered] };
}
