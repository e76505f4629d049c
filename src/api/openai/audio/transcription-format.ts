import { deflateSync } from 'node:zlib';
import type { TokenLogprob } from '../../../generation';
import type { AudioTask } from './transcription-request';

/**
 * The response bodies of /v1/audio/transcriptions and /v1/audio/translations (shared-service.md §6, openai-node's
 * Transcription / TranscriptionVerbose / TranslationVerbose / TranscriptionStreamEvent types). The model gives no
 * timestamps, so srt, vtt and verbose_json have exactly one segment: the whole clip, 0 to its duration.
 */

/** Token counts of one transcription (tokens). */
export interface TranscriptUsage {
  /** The whole prompt: text + audio embeddings (promptEvalCount). */
  inputTokens: number;
  /** Of `inputTokens`, the text (instruction, prompt, template). */
  textTokens: number;
  /** Of `inputTokens`, the audio embeddings the encoder produced. */
  audioTokens: number;
  /** Generated tokens (evalCount). */
  outputTokens: number;
}

/** A finished transcription, in domain terms. */
export interface Transcript {
  task: AudioTask;
  text: string;
  /** The clip's duration, seconds (from its header). */
  durationSeconds: number;
  /** `language` as sent (transcriptions), when given. */
  language?: string;
  usage: TranscriptUsage;
  /** The sampling temperature used. */
  temperature: number;
  /** The output tokens' logprobs, when they were asked for (include[] logprobs, or verbose_json's avg_logprob). */
  logprobs?: TokenLogprob[];
  /** The text's token ids in the model's vocabulary (verbose_json's segment `tokens`). */
  tokens?: number[];
}

/** `usage` of the json format and of `transcript.text.done`: OpenAI's token shape. */
export interface TranscriptionTokenUsage {
  type: 'tokens';
  input_tokens: number;
  input_token_details: { text_tokens: number; audio_tokens: number };
  output_tokens: number;
  total_tokens: number;
}

/** The json response. */
export interface TranscriptionJson {
  text: string;
  logprobs?: TokenLogprob[];
  usage: TranscriptionTokenUsage;
}

/** One verbose_json segment (Whisper's fields). */
export interface TranscriptionSegment {
  id: number;
  seek: number;
  start: number;
  end: number;
  text: string;
  tokens: number[];
  temperature: number;
  avg_logprob: number;
  compression_ratio: number;
  no_speech_prob: number;
}

/** The verbose_json response. */
export interface TranscriptionVerboseJson {
  task: AudioTask;
  language: string;
  duration: number;
  text: string;
  segments: TranscriptionSegment[];
  usage: { type: 'duration'; seconds: number };
}

/** The events of a streamed transcription. */
export type TranscriptionStreamEvent =
  | { type: 'transcript.text.delta'; delta: string; logprobs?: TokenLogprob[] }
  | { type: 'transcript.text.done'; text: string; logprobs?: TokenLogprob[]; usage: TranscriptionTokenUsage };

/** OpenAI's token usage object. */
export function toTokenUsage(usage: TranscriptUsage): TranscriptionTokenUsage {
  return {
    type: 'tokens',
    input_tokens: usage.inputTokens,
    input_token_details: { text_tokens: usage.textTokens, audio_tokens: usage.audioTokens },
    output_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}

/** `json`: `{text, logprobs?, usage}`. */
export function toTranscriptionJson(t: Transcript): TranscriptionJson {
  return { text: t.text, ...(t.logprobs ? { logprobs: t.logprobs } : {}), usage: toTokenUsage(t.usage) };
}

/** The cue text of srt/vtt: trimmed, blank lines (which would end the cue) collapsed, `-->` broken up. */
function cueText(text: string): string {
  return text
    .trim()
    .replace(/\r\n?/g, '\n')
    .replace(/\n{2,}/g, '\n')
    .replace(/-->/g, '->');
}

/** `hh:mm:ss<sep>mmm` of a time in seconds (milliseconds rounded). */
export function cueTimestamp(seconds: number, separator: ',' | '.'): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const pad = (n: number, width: number) => String(n).padStart(width, '0');
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor(ms / 60_000) % 60;
  const s = Math.floor(ms / 1000) % 60;
  return `${pad(h, 2)}:${pad(m, 2)}:${pad(s, 2)}${separator}${pad(ms % 1000, 3)}`;
}

/** `srt`: one cue, `1`, `00:00:00,000 --> <duration>`, the text. */
export function toSrt(t: Transcript): string {
  return `1\n${cueTimestamp(0, ',')} --> ${cueTimestamp(t.durationSeconds, ',')}\n${cueText(t.text)}\n\n`;
}

/** `vtt`: `WEBVTT`, then one cue `00:00:00.000 --> <duration>` with the text. */
export function toVtt(t: Transcript): string {
  return `WEBVTT\n\n${cueTimestamp(0, '.')} --> ${cueTimestamp(t.durationSeconds, '.')}\n${cueText(t.text)}\n\n`;
}

/**
 * Whisper's compression ratio of a text: its UTF-8 bytes over their zlib-compressed bytes (high for repetitive,
 * looping output). 0 for an empty text.
 */
export function compressionRatio(text: string): number {
  const bytes = Buffer.from(text, 'utf8');
  return bytes.length === 0 ? 0 : bytes.length / deflateSync(bytes).length;
}

/** The English name of a language code, lower-cased as OpenAI writes it (`en` → `english`); the code if unknown. */
export function languageName(code: string): string {
  try {
    return (new Intl.DisplayNames(['en'], { type: 'language' }).of(code) ?? code).toLowerCase();
  } catch {
    return code.toLowerCase();
  }
}

/**
 * `verbose_json`: task, language (a translation's is always `english`; a transcription's the name of the `language`
 * sent, else `unknown`: the model does not report one), duration (s), text, one segment over the whole clip (its
 * `tokens` the text's token ids, `avg_logprob` the mean of the output tokens' logprobs, `compression_ratio` as
 * Whisper computes it, `no_speech_prob` 0: the model gives none), usage by duration.
 */
export function toVerboseJson(t: Transcript): TranscriptionVerboseJson {
  const logprobs = t.logprobs ?? [];
  const avg = logprobs.length === 0 ? 0 : logprobs.reduce((sum, lp) => sum + lp.logprob, 0) / logprobs.length;
  const language = t.task === 'translate' ? 'english' : t.language ? languageName(t.language) : 'unknown';
  return {
    task: t.task,
    language,
    duration: t.durationSeconds,
    text: t.text,
    segments: [
      {
        id: 0,
        seek: 0,
        start: 0,
        end: t.durationSeconds,
        text: t.text,
        tokens: t.tokens ?? [],
        temperature: t.temperature,
        avg_logprob: avg,
        compression_ratio: compressionRatio(t.text),
        no_speech_prob: 0,
      },
    ],
    usage: { type: 'duration', seconds: Math.ceil(t.durationSeconds) },
  };
}
