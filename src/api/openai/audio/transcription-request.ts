import { InvalidRequestError } from '../../../common/errors';
import { KeepAliveMs, parseCompatKeepAlive } from '../../../common/time';
import { AudioFileInfo, probeAudio } from './audio-file';
import { MultipartForm, UploadedFile } from './multipart-form';

/** What the route does with the audio: `/v1/audio/transcriptions` or `/v1/audio/translations` (into English). */
export type AudioTask = 'transcribe' | 'translate';

/** The `response_format` values (shared-service.md §6; `diarized_json` is not served: no speaker separation). */
export const TRANSCRIPTION_FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt'] as const;
export type TranscriptionFormat = (typeof TRANSCRIPTION_FORMATS)[number];

/** A transcription or translation request in decoded form. */
export interface TranscriptionRequest {
  task: AudioTask;
  /** The model name as sent. */
  model: string;
  file: UploadedFile;
  /** Container and duration, from the bytes. */
  audio: AudioFileInfo;
  /** `language` as sent (ISO-639-1 such as `en`; transcriptions only), when given. */
  language?: string;
  /** `prompt`: context (earlier text, spellings) for the model, when given and not empty. */
  prompt?: string;
  responseFormat: TranscriptionFormat;
  /** `temperature`, 0..1 (default 0). */
  temperature: number;
  /** `stream`: SSE `transcript.text.*` events (json and text formats only). */
  stream: boolean;
  /** `include[]` had `logprobs` (json format only): the output tokens' logprobs. */
  logprobs: boolean;
  /** `keep_alive` (beyond OpenAI, as on the other compat routes), when given. */
  keepAliveMs?: KeepAliveMs;
}

/** The first value of a form field, when given. */
function first(form: MultipartForm, name: string): string | undefined {
  return form.fields.get(name)?.[0];
}

/** Every value of a repeated field, under `name[]` (openai-node) or `name` (a hand-written form). */
function all(form: MultipartForm, name: string): string[] {
  return [...(form.fields.get(`${name}[]`) ?? []), ...(form.fields.get(name) ?? [])];
}

/** A form boolean as Go's strconv.ParseBool reads it (`true`, `1`, `t`, … / `false`, `0`, `f`, …). */
function parseBool(value: string | undefined, name: string): boolean {
  if (value === undefined || value === '') return false;
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(value)) return false;
  throw new InvalidRequestError(`invalid ${name} value ${JSON.stringify(value)}: use true or false`, name);
}

/** A language tag: ISO-639-1 (`en`) or a BCP 47 tag (`pt-BR`); other text is refused rather than put in a prompt. */
const LANGUAGE_TAG = /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$/;

/**
 * Decodes the fields of a transcription (`task: 'transcribe'`) or translation form (shared-service.md §6; Ollama's
 * checks and texts first, reference/ollama-api.md §12.7 and §5.3): `model` and `file` are required, the file must be
 * non-empty WAV, MP3 or FLAC (sniffed from the bytes). Unknown fields (`chunking_strategy`, `known_speaker_names[]`,
 * …) are ignored; `timestamp_granularities[]` may name `segment` (the one segment verbose_json has).
 * @throws InvalidRequestError (400) in this order: `model is required`, `file is required: http: no such file`,
 *   `audio file is empty`, the format errors of probeAudio, then `invalid response_format "x": use json, text, srt,
 *   verbose_json or vtt`, `temperature must be a number between 0 and 1`, `invalid language "x": …`,
 *   `invalid stream value …`, `stream is not supported with response_format "x": use json or text`,
 *   `invalid include[] value "x": only logprobs is supported`, `include[] logprobs needs response_format json`,
 *   `timestamp_granularities[] "word" is not supported: the model gives no word timestamps`, and keep_alive errors.
 */
export function decodeTranscriptionForm(form: MultipartForm, task: AudioTask): TranscriptionRequest {
  const model = first(form, 'model') ?? '';
  if (model === '') throw new InvalidRequestError('model is required', 'model');
  const file = form.file;
  if (!file) throw new InvalidRequestError('file is required: http: no such file', 'file');
  const audio = probeAudio(file.bytes);

  const format = first(form, 'response_format') || 'json';
  if (!(TRANSCRIPTION_FORMATS as readonly string[]).includes(format)) {
    throw new InvalidRequestError(
      `invalid response_format ${JSON.stringify(format)}: use json, text, srt, verbose_json or vtt`,
      'response_format',
    );
  }
  const responseFormat = format as TranscriptionFormat;
  const temperatureText = first(form, 'temperature');
  const temperature = temperatureText === undefined || temperatureText === '' ? 0 : Number(temperatureText);
  if (!Number.isFinite(temperature) || temperature < 0 || temperature > 1) {
    throw new InvalidRequestError('temperature must be a number between 0 and 1', 'temperature');
  }
  const language = first(form, 'language') || undefined;
  if (language !== undefined && !LANGUAGE_TAG.test(language)) {
    throw new InvalidRequestError(
      `invalid language ${JSON.stringify(language)}: use an ISO-639-1 code such as "en"`,
      'language',
    );
  }
  const stream = parseBool(first(form, 'stream'), 'stream');
  if (stream && responseFormat !== 'json' && responseFormat !== 'text') {
    throw new InvalidRequestError(
      `stream is not supported with response_format ${JSON.stringify(responseFormat)}: use json or text`,
      'stream',
    );
  }
  const include = all(form, 'include');
  for (const item of include) {
    if (item !== 'logprobs') {
      throw new InvalidRequestError(
        `invalid include[] value ${JSON.stringify(item)}: only logprobs is supported`,
        'include',
      );
    }
  }
  const logprobs = include.length > 0;
  if (logprobs && responseFormat !== 'json') {
    throw new InvalidRequestError('include[] logprobs needs response_format json', 'include');
  }
  for (const granularity of all(form, 'timestamp_granularities')) {
    if (granularity === 'word') {
      throw new InvalidRequestError(
        'timestamp_granularities[] "word" is not supported: the model gives no word timestamps',
        'timestamp_granularities',
      );
    }
    if (granularity !== 'segment') {
      throw new InvalidRequestError(
        `invalid timestamp_granularities[] value ${JSON.stringify(granularity)}: use segment`,
        'timestamp_granularities',
      );
    }
  }
  const keepAliveText = first(form, 'keep_alive');
  const keepAliveMs =
    keepAliveText === undefined || keepAliveText === ''
      ? undefined
      : parseCompatKeepAlive(/^-?\d+(?:\.\d+)?$/.test(keepAliveText) ? Number(keepAliveText) : keepAliveText);
  const prompt = first(form, 'prompt') || undefined;
  return {
    task,
    model,
    file,
    audio,
    ...(language !== undefined && task === 'transcribe' ? { language } : {}),
    ...(prompt !== undefined ? { prompt } : {}),
    responseFormat,
    temperature,
    stream,
    logprobs,
    ...(keepAliveMs !== undefined ? { keepAliveMs } : {}),
  };
}
