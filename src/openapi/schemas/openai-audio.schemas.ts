import { arr, bool, int, JsonSchema, lit, num, obj, oneOfStr, ref, sseEvent, str } from './json-schema';

// The audio routes of the OpenAI-compatible layer (src/api/openai/audio; shared-service.md §6). Request bodies are
// multipart/form-data: the fields the route reads; other fields are accepted and ignored.

const uploadFields: Record<string, JsonSchema> = {
  file: {
    type: 'string',
    contentMediaType: 'application/octet-stream',
    description: 'The audio file, at most 25 MB: WAV, MP3 or FLAC (recognized from its bytes).',
  },
  model: str('A model whose projector has an audio encoder (capability `audio`).'),
  prompt: str('Context for the model: earlier text, names and spellings.'),
  response_format: { ...oneOfStr('json', 'text', 'srt', 'verbose_json', 'vtt'), default: 'json' },
  temperature: { ...num('0..1.'), default: 0 },
  stream: {
    ...bool('Server-sent `transcript.text.*` events (response_format json or text).'),
    default: false,
  },
  keep_alive: str('Beyond OpenAI: seconds or a Go duration, as on the other compat routes.'),
};

const tokenLogprob = obj({ token: str(), logprob: num(), bytes: arr(int()) }, ['token', 'logprob', 'bytes']);
const tokenUsage = obj(
  {
    type: lit('tokens'),
    input_tokens: int('The whole prompt: text + audio.'),
    input_token_details: obj({ text_tokens: int(), audio_tokens: int('The encoder’s embeddings.') }, [
      'text_tokens',
      'audio_tokens',
    ]),
    output_tokens: int(),
    total_tokens: int(),
  },
  ['type', 'input_tokens', 'input_token_details', 'output_tokens', 'total_tokens'],
);

/** The component schemas of /v1/audio/transcriptions and /v1/audio/translations. */
export const OPENAI_AUDIO_SCHEMAS: Record<string, JsonSchema> = {
  OpenAITranscriptionRequest: obj(
    {
      ...uploadFields,
      language: str('ISO-639-1 code of the speech (`en`): told to the model.'),
      'include[]': arr(lit('logprobs'), 'Repeated part; `logprobs` (json only) adds the output tokens’ logprobs.'),
      'timestamp_granularities[]': arr(
        lit('segment'),
        'Repeated part; `segment` only (one segment over the whole clip); `word` is refused.',
      ),
    },
    ['file', 'model'],
    { open: true },
  ),
  OpenAITranslationRequest: obj(uploadFields, ['file', 'model'], { open: true }),
  OpenAITranscriptionJson: obj({ text: str(), logprobs: arr(tokenLogprob), usage: tokenUsage }, ['text', 'usage'], {
    description: 'response_format json.',
  }),
  OpenAITranscriptionVerbose: obj(
    {
      task: oneOfStr('transcribe', 'translate'),
      language: str('The `language` sent, by name (`english`); translations `english`; else `unknown`.'),
      duration: num('Seconds, from the file header.'),
      text: str(),
      segments: arr(
        obj(
          {
            id: int(),
            seek: int(),
            start: num(),
            end: num(),
            text: str(),
            tokens: arr(int()),
            temperature: num(),
            avg_logprob: num(),
            compression_ratio: num(),
            no_speech_prob: num('Always 0: the model gives none.'),
          },
          [
            'id',
            'seek',
            'start',
            'end',
            'text',
            'tokens',
            'temperature',
            'avg_logprob',
            'compression_ratio',
            'no_speech_prob',
          ],
        ),
        'One segment over the whole clip: the model gives no timestamps.',
      ),
      usage: obj({ type: lit('duration'), seconds: int() }, ['type', 'seconds']),
    },
    ['task', 'language', 'duration', 'text', 'segments', 'usage'],
    { description: 'response_format verbose_json.' },
  ),
  OpenAITranscription: { oneOf: [ref('OpenAITranscriptionJson'), ref('OpenAITranscriptionVerbose')] },
  OpenAITranscriptionStreamEvent: sseEvent(
    {
      oneOf: [
        obj({ type: lit('transcript.text.delta'), delta: str(), logprobs: arr(tokenLogprob) }, ['type', 'delta']),
        obj({ type: lit('transcript.text.done'), text: str(), logprobs: arr(tokenLogprob), usage: tokenUsage }, [
          'type',
          'text',
          'usage',
        ]),
      ],
    },
    'A server-sent event of a streamed transcription: `data: <event JSON>`; the last is `transcript.text.done` (no `[DONE]`).',
  ),
};
