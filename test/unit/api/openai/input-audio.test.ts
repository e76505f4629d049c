import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../src/common/errors';
import { decodeInputAudio, decodeMessages } from '../../../../src/api/openai';
import { decodeInput } from '../../../../src/api/openai/responses';

const WAV = Buffer.concat([Buffer.from('RIFF'), Buffer.from([36, 0, 0, 0]), Buffer.from('WAVEfmt ')]).toString(
  'base64',
);
const FLAC = Buffer.from('fLaC\0\0\0\x22').toString('base64');
const PNG = Buffer.from('\x89PNG\r\n\x1a\n', 'latin1').toString('base64');

function rejects(fn: () => unknown, message: RegExp, param: string): void {
  assert.throws(fn, (e: unknown) => e instanceof InvalidRequestError && message.test(e.message) && e.param === param);
}

describe('OpenAI input_audio parts', () => {
  it('decodeInputAudio returns the data of wav, mp3 and flac parts (format optional; the bytes decide)', () => {
    assert.equal(decodeInputAudio({ data: WAV, format: 'wav' }, 'messages'), WAV);
    assert.equal(decodeInputAudio({ data: FLAC, format: 'flac' }, 'messages'), FLAC);
    assert.equal(decodeInputAudio({ data: WAV }, 'messages'), WAV);
  });

  it("refuses with Ollama's texts, naming the supported formats", () => {
    rejects(() => decodeInputAudio(undefined, 'messages'), /^invalid input_audio format$/, 'messages');
    rejects(() => decodeInputAudio('x', 'messages'), /^invalid input_audio format$/, 'messages');
    rejects(() => decodeInputAudio({ format: 'wav' }, 'input'), /^invalid input_audio format: missing data$/, 'input');
    rejects(() => decodeInputAudio({ data: '', format: 'wav' }, 'messages'), /missing data/, 'messages');
    rejects(
      () => decodeInputAudio({ data: WAV, format: 'ogg' }, 'messages'),
      /^invalid input_audio format: "ogg" \(supported: wav, mp3, flac\)$/,
      'messages',
    );
    rejects(() => decodeInputAudio({ data: 'no!', format: 'wav' }, 'messages'), /not valid base64/, 'messages');
    rejects(() => decodeInputAudio({ data: PNG, format: 'wav' }, 'messages'), /not a WAV, MP3 or FLAC/, 'messages');
  });

  it('a chat input_audio part becomes a message with that audio, like an image part', () => {
    const msgs = decodeMessages([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is said?' },
          { type: 'input_audio', input_audio: { data: WAV, format: 'wav' } },
        ],
      },
    ]);
    assert.deepEqual(msgs, [
      { role: 'user', content: 'what is said?' },
      { role: 'user', content: '', audio: [WAV] },
    ]);
    rejects(
      () =>
        decodeMessages([
          { role: 'user', content: [{ type: 'input_audio', input_audio: { data: WAV, format: 'aac' } }] },
        ]),
      /supported: wav, mp3, flac/,
      'messages',
    );
  });

  it('Responses input_audio parts and bare items carry their audio', () => {
    const out = decodeInput([
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'listen' },
          { type: 'input_audio', input_audio: { data: WAV, format: 'wav' } },
          { type: 'input_audio', input_audio: { data: FLAC, format: 'flac' } },
        ],
      },
      { type: 'input_audio', input_audio: { data: WAV, format: 'wav' } },
    ]);
    assert.deepEqual(out, [
      { role: 'user', content: 'listen', audio: [WAV, FLAC] },
      { role: 'user', content: '', audio: [WAV] },
    ]);
    rejects(
      () =>
        decodeInput([{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: WAV, format: 'm4a' } }] }]),
      /supported: wav, mp3, flac/,
      'input',
    );
  });
});
