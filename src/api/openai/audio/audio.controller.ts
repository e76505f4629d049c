import { Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { filter, fromEvent, lastValueFrom, map, takeUntil } from 'rxjs';
import { clientGoneSignal, writeStream } from '../../../common/http';
import { answerWithoutReadingBody, LlamadRoutes, Metered } from '../../../security';
import { ApiRoute, ApiTag } from '../../../openapi/api-route.decorator';
import { OpenAIExceptionFilter, openAIErrorFrame } from '../openai-error';
import { AUDIO_UPLOAD_LIMITS, MultipartForm, readMultipartForm } from './multipart-form';
import {
  toSrt,
  toTokenUsage,
  toTranscriptionJson,
  toVerboseJson,
  toVtt,
  Transcript,
  TranscriptionStreamEvent,
} from './transcription-format';
import { AudioTask, decodeTranscriptionForm, TranscriptionFormat } from './transcription-request';
import { TranscriptEvent, TranscriptionService } from './transcription.service';

/** A response body and its Content-Type. */
interface RenderedTranscript {
  contentType: string;
  body: string;
}

/** The body of a finished transcript in the requested format (json and verbose_json as JSON, the others as text). */
export function renderTranscript(t: Transcript, format: TranscriptionFormat): RenderedTranscript {
  switch (format) {
    case 'json':
      return { contentType: 'application/json; charset=utf-8', body: JSON.stringify(toTranscriptionJson(t)) };
    case 'verbose_json':
      return { contentType: 'application/json; charset=utf-8', body: JSON.stringify(toVerboseJson(t)) };
    case 'text':
      return { contentType: 'text/plain; charset=utf-8', body: t.text };
    case 'srt':
      return { contentType: 'text/plain; charset=utf-8', body: toSrt(t) };
    case 'vtt':
      return { contentType: 'text/vtt; charset=utf-8', body: toVtt(t) };
  }
}

/** A transcript event as its stream event (shared-service.md §6): `transcript.text.delta` / `transcript.text.done`. */
export function toStreamEvent(event: TranscriptEvent): TranscriptionStreamEvent {
  if (event.kind === 'delta') {
    return {
      type: 'transcript.text.delta',
      delta: event.text,
      ...(event.logprobs ? { logprobs: event.logprobs } : {}),
    };
  }
  const t = event.transcript;
  return {
    type: 'transcript.text.done',
    text: t.text,
    ...(t.logprobs ? { logprobs: t.logprobs } : {}),
    usage: toTokenUsage(t.usage),
  };
}

/** Shared route documentation of the two audio routes. */
const AUDIO_ROUTE = {
  tag: ApiTag.OpenAI,
  rateLimited: true,
  ok: {
    description:
      'json: `{text, usage}`; verbose_json: `{task, language, duration, text, segments, usage}` (one segment: the ' +
      'model gives no timestamps); text, srt, vtt: the text; with `stream: true` (json or text) ' +
      '`transcript.text.delta` events then one `transcript.text.done`, no `[DONE]`.',
    json: 'OpenAITranscription',
    sse: 'OpenAITranscriptionStreamEvent',
    text: 'Hello world.',
  },
  statuses: {
    400: 'Missing model or file, an empty file, audio other than WAV/MP3/FLAC, an invalid field, or a model without an audio encoder.',
    413: 'The file is over 25 MB (26,214,400 bytes), or the body over 26 MB.',
  },
} as const;

/**
 * OpenAI's audio routes (shared-service.md §6; Ollama reference/ollama-api.md §12.7): POST /v1/audio/transcriptions
 * and POST /v1/audio/translations. The body is multipart/form-data, handed over unread by the body parser
 * (AUDIO_UPLOAD_ROUTE) after the request gate, the API key, the role and the rate-limit admission have passed (all
 * `onRequest`, before any body byte is read); it is parsed here, streaming, within AUDIO_UPLOAD_LIMITS, the file kept
 * in memory only. Errors are rendered by OpenAIExceptionFilter; an upload refused before its end (too large, too many
 * fields) is answered with `Connection: close` and the rest of the body is not read.
 */
@Controller('v1/audio')
@LlamadRoutes(OpenAIExceptionFilter)
export class AudioController {
  constructor(private readonly service: TranscriptionService) {}

  /** Speech to text in the audio's language. */
  @Post('transcriptions')
  @HttpCode(200)
  @Metered('openai')
  @ApiRoute({
    ...AUDIO_ROUTE,
    id: 'createTranscription',
    summary: 'Transcribe audio',
    multipartBody: 'OpenAITranscriptionRequest',
  })
  transcriptions(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.handle('transcribe', request, reply);
  }

  /** Speech to English text. */
  @Post('translations')
  @HttpCode(200)
  @Metered('openai')
  @ApiRoute({
    ...AUDIO_ROUTE,
    id: 'createTranslation',
    summary: 'Translate audio into English',
    multipartBody: 'OpenAITranslationRequest',
  })
  translations(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.handle('translate', request, reply);
  }

  private async handle(task: AudioTask, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const startedAt = process.hrtime.bigint();
    const req = decodeTranscriptionForm(await this.readForm(request, reply), task);
    const events$ = this.service.transcribe(req, startedAt);
    if (req.stream) {
      await writeStream(reply, events$.pipe(map(toStreamEvent)), {
        contentType: 'text/event-stream',
        encode: (event) => `data: ${JSON.stringify(event)}\n\n`,
        encodeError: (err) => `data: ${JSON.stringify(openAIErrorFrame(err))}\n\n`,
      });
      return;
    }
    const gone$ = fromEvent(clientGoneSignal(reply), 'abort');
    const transcript = await lastValueFrom(
      events$.pipe(
        filter((e): e is Extract<TranscriptEvent, { kind: 'done' }> => e.kind === 'done'),
        map((e) => e.transcript),
        takeUntil(gone$),
      ),
      { defaultValue: undefined },
    );
    if (!transcript) return; // the client left: generation was cancelled
    const { contentType, body } = renderTranscript(transcript, req.responseFormat);
    await reply.status(200).header('content-type', contentType).send(body);
  }

  /** The multipart form; a refusal before the body's end closes the connection without reading the rest. */
  private async readForm(request: FastifyRequest, reply: FastifyReply): Promise<MultipartForm> {
    const body = request.body instanceof Readable ? request.body : request.raw;
    try {
      return await readMultipartForm(body, request.headers, AUDIO_UPLOAD_LIMITS);
    } catch (err) {
      if (!request.raw.complete) answerWithoutReadingBody(request, reply);
      throw err;
    }
  }
}
