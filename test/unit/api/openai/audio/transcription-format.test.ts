import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderTranscript, toStreamEvent } from '../../../../../src/api/openai/audio/audio.controller';
import {
  compressionRatio,
  cueTimestamp,
  languageName,
  toSrt,
  toTranscriptionJson,
  toVerboseJson,
  toVtt,
  Transcript,
} from '../../../../../src/api/openai/audio/transcription-format';

const transcript = (over: Partial<Transcript> = {}): Transcript => ({
  task: 'transcribe',
  text: 'Hello world.',
  durationSeconds: 3725.5,
  usage: { inputTokens: 780, textTokens: 30, audioTokens: 750, outputTokens: 4 },
  temperature: 0,
  ...over,
});

describe('transcription response formats', () => {
  it('json: text and OpenAI token usage (text + audio = input; input + output = total)', () => {
    assert.deepEqual(toTranscriptionJson(transcript()), {
      text: 'Hello world.',
      usage: {
        type: 'tokens',
        input_tokens: 780,
        input_token_details: { text_tokens: 30, audio_tokens: 750 },
        output_tokens: 4,
        total_tokens: 784,
      },
    });
    const lp = [{ token: 'Hello', logprob: -0.5, bytes: [72, 101, 108, 108, 111] }];
    assert.deepEqual(toTranscriptionJson(transcript({ logprobs: lp })).logprobs, lp);
  });

  it('srt and vtt: one cue over the whole clip, with their timestamp forms', () => {
    assert.equal(cueTimestamp(3725.5, ','), '01:02:05,500');
    assert.equal(cueTimestamp(0.0004, '.'), '00:00:00.000');
    assert.equal(toSrt(transcript()), '1\n00:00:00,000 --> 01:02:05,500\nHello world.\n\n');
    assert.equal(toVtt(transcript()), 'WEBVTT\n\n00:00:00.000 --> 01:02:05.500\nHello world.\n\n');
    // A blank line would end the cue, `-->` would start a timing line.
    assert.equal(
      toSrt(transcript({ text: ' a\n\n\nb --> c ', durationSeconds: 1 })),
      '1\n00:00:00,000 --> 00:00:01,000\na\nb -> c\n\n',
    );
  });

  it('verbose_json: task, language by name, duration, one segment, duration usage', () => {
    const lp = [
      { token: 'a', logprob: -1, bytes: [97] },
      { token: 'b', logprob: -3, bytes: [98] },
    ];
    const v = toVerboseJson(
      transcript({ language: 'en', logprobs: lp, tokens: [5, 6], temperature: 0.2, durationSeconds: 2.25 }),
    );
    assert.equal(v.task, 'transcribe');
    assert.equal(v.language, 'english');
    assert.equal(v.duration, 2.25);
    assert.equal(v.text, 'Hello world.');
    assert.deepEqual(v.usage, { type: 'duration', seconds: 3 });
    assert.equal(v.segments.length, 1);
    const s = v.segments[0];
    assert.deepEqual(
      {
        id: s.id,
        seek: s.seek,
        start: s.start,
        end: s.end,
        text: s.text,
        tokens: s.tokens,
        temperature: s.temperature,
      },
      { id: 0, seek: 0, start: 0, end: 2.25, text: 'Hello world.', tokens: [5, 6], temperature: 0.2 },
    );
    assert.equal(s.avg_logprob, -2);
    assert.equal(s.no_speech_prob, 0);
    assert.equal(s.compression_ratio, compressionRatio('Hello world.'));
    assert.equal(toVerboseJson(transcript({ task: 'translate', language: 'de' })).language, 'english');
    assert.equal(toVerboseJson(transcript()).language, 'unknown');
  });

  it("compression ratio is Whisper's: UTF-8 bytes over zlib bytes (repetition compresses)", () => {
    assert.equal(compressionRatio(''), 0);
    assert.ok(compressionRatio('la '.repeat(200)) > 10);
    assert.ok(compressionRatio('The quick brown fox.') < 1.5);
    assert.equal(languageName('fr'), 'french');
    assert.equal(languageName('pt-BR'), 'brazilian portuguese');
  });

  it('renders each format with its content type', () => {
    const t = transcript();
    assert.match(renderTranscript(t, 'json').contentType, /^application\/json/);
    assert.deepEqual(JSON.parse(renderTranscript(t, 'json').body), toTranscriptionJson(t));
    assert.deepEqual(JSON.parse(renderTranscript(t, 'verbose_json').body), toVerboseJson(t));
    assert.deepEqual(renderTranscript(t, 'text'), { contentType: 'text/plain; charset=utf-8', body: 'Hello world.' });
    assert.equal(renderTranscript(t, 'srt').body, toSrt(t));
    assert.match(renderTranscript(t, 'vtt').contentType, /^text\/vtt/);
  });

  it('stream events: transcript.text.delta, then transcript.text.done with text and token usage', () => {
    assert.deepEqual(toStreamEvent({ kind: 'delta', text: 'Hel' }), { type: 'transcript.text.delta', delta: 'Hel' });
    const done = toStreamEvent({ kind: 'done', transcript: transcript() });
    assert.equal(done.type, 'transcript.text.done');
    assert.equal(done.type === 'transcript.text.done' && done.text, 'Hello world.');
    assert.deepEqual(done.type === 'transcript.text.done' && done.usage, toTranscriptionJson(transcript()).usage);
  });
});
