import { Injectable } from '@nestjs/common';
import { concat, concatMap, defer, from, map, Observable, of } from 'rxjs';
import { decodeOptions } from '../../../common/options';
import {
  ChatCommand,
  ChatService,
  GenerationEvent,
  Logprob,
  MEDIA_MARKER,
  TokenizeService,
  TokenLogprob,
} from '../../../generation';
import { InvalidRequestError } from '../../../common/errors';
import { DaemonConfig } from '../../../config';
import { ModelsService } from '../../../models';
import { languageName, Transcript } from './transcription-format';
import { TranscriptionRequest } from './transcription-request';

/** What a transcription emits: text as it is generated, then the whole transcript. */
export type TranscriptEvent =
  | { kind: 'delta'; text: string; logprobs?: TokenLogprob[] }
  | { kind: 'done'; transcript: Transcript };

/**
 * Most output tokens per started 30 s of audio: Whisper's decoder limit per window (448), so a model that does not
 * stop (random weights, a looping answer) ends within a bound that any real transcript of the clip stays under.
 */
export const OUTPUT_TOKENS_PER_30S = 448;

/** The instruction of the internal chat request (Ollama: "Transcribe the audio exactly as spoken…", §12.7). */
export function transcriptionInstruction(req: Pick<TranscriptionRequest, 'task' | 'language' | 'prompt'>): string {
  let text =
    req.task === 'translate'
      ? 'Translate the speech in the audio into English. Reply with the English translation only, without comments.'
      : 'Transcribe the audio exactly as spoken. Reply with the transcript only, without comments.';
  if (req.language) text += ` The speech is in ${languageName(req.language)} (${req.language}).`;
  if (req.prompt) text += `\n\nContext (earlier text, names and spellings; do not repeat it): ${req.prompt}`;
  return text;
}

/** Seconds as the engine writes them in its duration refusal: one decimal, without a trailing `.0`. */
function formatSeconds(seconds: number): string {
  return seconds.toFixed(1).replace(/\.0$/, '');
}

/**
 * The duration bound (LLAMAD_MAX_AUDIO_SECONDS), checked from the file's header before the model is loaded; the
 * engine checks the decoded clip again with the same message.
 * @throws InvalidRequestError `audio is <d> s long; the limit is <m> s (LLAMAD_MAX_AUDIO_SECONDS)` (400).
 */
export function checkDuration(seconds: number, maxSeconds: number): void {
  if (maxSeconds > 0 && seconds > maxSeconds) {
    throw new InvalidRequestError(
      `audio is ${formatSeconds(seconds)} s long; the limit is ${formatSeconds(maxSeconds)} s (LLAMAD_MAX_AUDIO_SECONDS)`,
      'file',
    );
  }
}

/** The sampled token's logprob without its alternatives (OpenAI's transcription logprob shape). */
function plainLogprobs(logprobs: Logprob[] | undefined): TokenLogprob[] | undefined {
  return logprobs?.map(({ token, logprob, bytes }) => ({ token, logprob, bytes }));
}

/**
 * /v1/audio/transcriptions and /v1/audio/translations in domain terms (reference/ollama-api.md §12.7): one internal
 * chat request through ChatService (so the capability checks, the scheduler's queue and fair gate, the principal's
 * token budget, metrics, traces and keep_alive apply as on /v1/chat/completions): a system message with the
 * instruction (+ language, + the prompt as context) and a user message carrying the audio (`audio: [base64]`),
 * temperature as sent (default 0), no thinking, at most {@link OUTPUT_TOKENS_PER_30S} output tokens per started 30 s
 * (or the model's own `num_predict` when lower).
 * Knows nothing about HTTP.
 */
@Injectable()
export class TranscriptionService {
  constructor(
    private readonly chat: ChatService,
    private readonly tokenizer: TokenizeService,
    private readonly models: ModelsService,
    private readonly config: DaemonConfig,
  ) {}

  /**
   * The internal chat request of a transcription.
   * @param modelNumPredict the model's own `num_predict` (Modelfile PARAMETER), when it has one: a positive one lowers
   *   the output bound (never raises it).
   */
  static chatCommand(req: TranscriptionRequest, startedAt: bigint, modelNumPredict?: unknown): ChatCommand {
    const windows = Math.max(1, Math.ceil(req.audio.durationSeconds / 30));
    const bound = windows * OUTPUT_TOKENS_PER_30S;
    const numPredict =
      typeof modelNumPredict === 'number' && modelNumPredict > 0 ? Math.min(modelNumPredict, bound) : bound;
    return {
      model: req.model,
      messages: [
        { role: 'system', content: transcriptionInstruction(req) },
        { role: 'user', content: '', audio: [req.file.bytes.toString('base64')] },
      ],
      think: false,
      options: decodeOptions({ temperature: req.temperature, num_predict: numPredict }),
      // Logprobs for include[] logprobs, and for verbose_json's avg_logprob.
      topLogprobs: req.logprobs || req.responseFormat === 'verbose_json' ? 0 : undefined,
      growContext: true,
      shift: false,
      ...(req.keepAliveMs !== undefined ? { keepAliveMs: req.keepAliveMs } : {}),
      startedAt,
    };
  }

  /**
   * The events of one transcription: a `delta` per piece of generated text (empty ones skipped), then one `done`
   * with the whole transcript, its usage (text tokens = the prompt's tokens less the audio marker's; audio tokens =
   * the rest of `promptEvalCount`, the encoder's embeddings) and, for verbose_json, the text's token ids. Cold. Errors
   * are checkDuration's (before the model is loaded), then ChatService.chat's (404 for an unknown model, 400
   * `this model is missing data required for audio input` for a model without an audio encoder, engine decode errors).
   */
  transcribe(req: TranscriptionRequest, startedAt: bigint): Observable<TranscriptEvent> {
    return defer(async () => {
      checkDuration(req.audio.durationSeconds, this.config.maxAudioSeconds);
      return (await this.models.resolve(req.model)).params.num_predict;
    }).pipe(
      concatMap((modelNumPredict) => this.run(req, TranscriptionService.chatCommand(req, startedAt, modelNumPredict))),
    );
  }

  private run(req: TranscriptionRequest, cmd: ChatCommand): Observable<TranscriptEvent> {
    return defer(() => {
      let promptTextTokens = 0;
      let text = '';
      const logprobs: TokenLogprob[] = [];
      const events$ = this.chat.chat(cmd, { onPrompt: (tokens) => (promptTextTokens = tokens) });
      return events$.pipe(
        concatMap((event: GenerationEvent): Observable<TranscriptEvent> => {
          if (event.kind === 'delta') {
            const lp = plainLogprobs(event.logprobs);
            if (lp) logprobs.push(...lp);
            if (event.text === '') return of();
            text += event.text;
            return of({ kind: 'delta', text: event.text, ...(req.logprobs && lp ? { logprobs: lp } : {}) });
          }
          const tail = event.text ?? '';
          text += tail;
          const done$ = defer(() => from(this.finish(req, text, promptTextTokens, event, logprobs))).pipe(
            map((transcript): TranscriptEvent => ({ kind: 'done', transcript })),
          );
          return tail === '' ? done$ : concat(of<TranscriptEvent>({ kind: 'delta', text: tail }), done$);
        }),
      );
    });
  }

  /** The finished transcript: text, usage and (verbose_json) the text's token ids. */
  private async finish(
    req: TranscriptionRequest,
    text: string,
    promptTextTokens: number,
    done: Extract<GenerationEvent, { kind: 'done' }>,
    logprobs: TokenLogprob[],
  ): Promise<Transcript> {
    const inputTokens = done.metrics?.promptEvalCount ?? 0;
    // The prompt was tokenized with the audio's media marker in it; the engine puts the embeddings in its place.
    const marker = await this.tokens(req.model, MEDIA_MARKER, true);
    const textTokens = Math.min(inputTokens, Math.max(0, promptTextTokens - marker.length));
    const transcriptText = text.trim();
    return {
      task: req.task,
      text: transcriptText,
      durationSeconds: req.audio.durationSeconds,
      ...(req.language ? { language: req.language } : {}),
      usage: {
        inputTokens,
        textTokens,
        audioTokens: inputTokens - textTokens,
        outputTokens: done.metrics?.evalCount ?? 0,
      },
      temperature: req.temperature,
      ...(req.logprobs || req.responseFormat === 'verbose_json' ? { logprobs } : {}),
      ...(req.responseFormat === 'verbose_json' ? { tokens: await this.tokens(req.model, transcriptText, false) } : {}),
    };
  }

  /** Token ids of `text` in the model's vocabulary (no BOS/EOS). */
  private async tokens(model: string, content: string, parseSpecial: boolean): Promise<number[]> {
    if (content === '') return [];
    const result = await this.tokenizer.tokenize({
      model,
      content,
      addSpecial: false,
      parseSpecial,
      withPieces: false,
    });
    return result.tokens;
  }
}
