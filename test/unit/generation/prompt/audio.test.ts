import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  NO_AUDIO_MESSAGE,
  checkAudio,
  checkAudioData,
  foldAudio,
  isBase64,
  sniffAudio,
} from '../../../../src/generation/prompt/audio';
import {
  MEDIA_MARKER,
  NO_VISION_MESSAGE,
  checkImages,
  toMediaPrompt,
  withImageMarkers,
} from '../../../../src/generation/prompt/media';
import type { ResolvedModel } from '../../../../src/models';
import { InvalidRequestError } from '../../../../src/common/errors';

const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));
const WAV = bytes('RIFF', [36, 0, 0, 0], 'WAVEfmt ');
const b64 = (b: Buffer) => b.toString('base64');
const model = (...capabilities: string[]) => ({ capabilities }) as unknown as ResolvedModel;

describe('audio input checks', () => {
  it('sniffs WAV, MP3 (ID3 and frame sync) and FLAC like mtmd-helper, nothing else', () => {
    assert.equal(sniffAudio(WAV), 'wav');
    assert.equal(sniffAudio(bytes('ID3', [4, 0, 0])), 'mp3');
    assert.equal(sniffAudio(bytes([0xff, 0xfb, 0x90, 0x00])), 'mp3');
    assert.equal(sniffAudio(bytes('fLaC', [0, 0, 0, 34])), 'flac');
    assert.equal(sniffAudio(bytes('RIFF', [0, 0, 0, 0], 'AVI ')), undefined);
    assert.equal(sniffAudio(bytes([0x89], 'PNG\r\n')), undefined);
    assert.equal(sniffAudio(bytes([0xff, 0x1f])), undefined);
    assert.equal(sniffAudio(new Uint8Array(0)), undefined);
  });

  it('accepts only padded standard base64', () => {
    assert.ok(isBase64('UklGRg=='));
    assert.ok(isBase64('UklG\r\nRg=='));
    assert.ok(!isBase64('UklGRg='));
    assert.ok(!isBase64('Ukl-Rg=='));
    assert.ok(!isBase64('Uk=lRg=='));
    assert.ok(!isBase64('not base64!'));
  });

  it('refuses empty, non-base64 and non-audio entries with a 400 that names the entry', () => {
    const refused = (data: string, text: RegExp) =>
      assert.throws(
        () => checkAudioData(data, 'audio[2]'),
        (e: unknown) => e instanceof InvalidRequestError && text.test(e.message),
      );
    refused('', /^audio\[2\] is empty$/);
    refused('@@@@', /^audio\[2\] is not valid base64$/);
    refused(b64(bytes([0x89], 'PNG\r\n\x1a\n')), /^audio\[2\] is not a WAV, MP3 or FLAC file/);
    checkAudioData(b64(WAV), 'audio[0]');
  });

  it('refuses audio to a model without the audio capability, in the plan wording', () => {
    assert.throws(
      () => checkAudio(model('completion', 'vision'), [b64(WAV)]),
      (e: unknown) => e instanceof InvalidRequestError && e.message === NO_AUDIO_MESSAGE,
    );
    checkAudio(model('completion'), []);
    checkAudio(model('completion', 'audio'), [b64(WAV)]);
    assert.throws(() => checkAudio(model('completion', 'audio'), [b64(WAV), 'x']), /audio\[1\] is not valid base64/);
  });

  it('an audio file sent in `images` (as Ollama clients do) needs the audio capability, not vision', () => {
    const png = b64(bytes([0x89], 'PNG\r\n\x1a\n'));
    const is = (message: string) => (e: unknown) => e instanceof InvalidRequestError && e.message === message;
    checkImages(model('completion', 'audio'), [b64(WAV)]);
    checkImages(model('completion', 'vision'), [png]);
    checkImages(model('completion', 'vision', 'audio'), [png, b64(WAV)]);
    checkImages(model('completion'), []);
    assert.throws(() => checkImages(model('completion', 'vision'), [png, b64(WAV)]), is(NO_AUDIO_MESSAGE));
    assert.throws(() => checkImages(model('completion', 'audio'), [b64(WAV), png]), is(NO_VISION_MESSAGE));
    assert.throws(() => checkImages(model('completion'), ['not an image']), is(NO_VISION_MESSAGE));
  });

  it('numbers a message audio after its images and before the next message media', () => {
    const folded = foldAudio([
      { role: 'user', content: 'hear', images: ['i0'], audio: ['a0', 'a1'] },
      { role: 'user', content: 'more', audio: ['a2'] },
      { role: 'assistant', content: 'ok' },
    ]);
    assert.deepEqual(
      folded.map((m) => [m.images, 'audio' in m]),
      [
        [['i0', 'a0', 'a1'], false],
        [['a2'], false],
        [undefined, false],
      ],
    );
    const marked = withImageMarkers(folded);
    assert.deepEqual(
      marked.map((m) => m.content),
      ['[img-0][img-1][img-2]hear', '[img-3]more', 'ok'],
    );
    const media = toMediaPrompt(
      marked.map((m) => m.content).join('|'),
      folded.flatMap((m) => m.images ?? []).map((s) => Buffer.from(s).toString('base64')),
    );
    assert.equal(media?.prompt.split(MEDIA_MARKER).length, 5);
    assert.deepEqual(
      media?.images.map((b) => Buffer.from(b).toString()),
      ['i0', 'a0', 'a1', 'a2'],
    );
  });
});
