import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../../src/common/errors';
import { probeAudio, UNSUPPORTED_AUDIO_MESSAGE } from '../../../../../src/api/openai/audio/audio-file';

/** A PCM WAV header + `dataBytes` of silence; `declaredData` overrides the data chunk's size field. */
function wav(sampleRate: number, channels: number, dataBytes: number, declaredData = dataBytes): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVE', 8, 'latin1');
  header.write('fmt ', 12, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * channels * 2, 28);
  header.writeUInt16LE(channels * 2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(declaredData, 40);
  return Buffer.concat([header, Buffer.alloc(dataBytes)]);
}

/** `fLaC` + a STREAMINFO block with the given sample rate and total samples. */
function flac(sampleRate: number, totalSamples: number): Buffer {
  const buf = Buffer.alloc(8 + 34);
  buf.write('fLaC', 0, 'latin1');
  buf[4] = 0x80; // last block, type 0 (STREAMINFO)
  buf.writeUIntBE(34, 5, 3);
  const info = 8;
  buf[info + 10] = (sampleRate >> 12) & 0xff;
  buf[info + 11] = (sampleRate >> 4) & 0xff;
  buf[info + 12] = ((sampleRate & 0x0f) << 4) | (0 << 1); // mono
  buf[info + 13] = (15 << 4) | Math.floor(totalSamples / 2 ** 32); // 16 bits per sample
  buf.writeUInt32BE(totalSamples % 2 ** 32, info + 14);
  return buf;
}

/** `frames` MPEG-1 Layer III frames at 128 kbps / 44.1 kHz (417 bytes each, no padding), after an optional ID3v2 tag. */
function mp3(frames: number, id3 = false): Buffer {
  const frame = Buffer.alloc(417);
  frame.set([0xff, 0xfb, 0x90, 0x00]);
  const parts = Array.from({ length: frames }, () => frame);
  if (id3) {
    const tag = Buffer.alloc(10 + 20);
    tag.write('ID3', 0, 'latin1');
    tag[3] = 4;
    tag[9] = 20; // syncsafe size 20
    parts.unshift(tag);
  }
  return Buffer.concat(parts);
}

const refuses = (bytes: Buffer, message: string | RegExp) =>
  assert.throws(
    () => probeAudio(bytes),
    (err: unknown) =>
      err instanceof InvalidRequestError &&
      (typeof message === 'string' ? err.message === message : message.test(err.message)),
  );

describe('probeAudio (format sniffing and duration)', () => {
  it('reads a WAV duration from its data size and byte rate; a streamed oversized size is clamped', () => {
    assert.deepEqual(probeAudio(wav(16000, 1, 32000)), { format: 'wav', durationSeconds: 1 });
    assert.deepEqual(probeAudio(wav(8000, 2, 16000)), { format: 'wav', durationSeconds: 0.5 });
    assert.equal(probeAudio(wav(16000, 1, 16000, 0xffffffff)).durationSeconds, 0.5);
  });

  it('reads a FLAC duration from STREAMINFO (36-bit total samples)', () => {
    assert.deepEqual(probeAudio(flac(16000, 48000)), { format: 'flac', durationSeconds: 3 });
    assert.equal(probeAudio(flac(48000, 2 ** 33)).durationSeconds, 2 ** 33 / 48000);
  });

  it('sums MP3 frames, after an ID3v2 tag too', () => {
    const expected = (38 * 1152) / 44100;
    assert.equal(probeAudio(mp3(38)).format, 'mp3');
    assert.ok(Math.abs(probeAudio(mp3(38)).durationSeconds - expected) < 1e-9);
    assert.ok(Math.abs(probeAudio(mp3(38, true)).durationSeconds - expected) < 1e-9);
  });

  it('refuses empty, unknown and broken files with 400', () => {
    refuses(Buffer.alloc(0), 'audio file is empty');
    refuses(Buffer.from('hello, this is text'), UNSUPPORTED_AUDIO_MESSAGE);
    refuses(Buffer.from('\x89PNG\r\n\x1a\n0000', 'latin1'), UNSUPPORTED_AUDIO_MESSAGE);
    refuses(Buffer.from('OggS\0\0\0\0\0\0\0\0', 'latin1'), UNSUPPORTED_AUDIO_MESSAGE);
    refuses(wav(16000, 1, 100).subarray(0, 36), /^invalid WAV file: /);
    refuses(Buffer.from('fLaC\x01\0\0\0', 'latin1'), /^invalid FLAC file: /);
    refuses(
      Buffer.concat([Buffer.from('ID3\x04\0\0\0\0\0\0', 'latin1'), Buffer.from('no frames here')]),
      /^invalid MP3 file: /,
    );
  });

  it('agrees with sox on files sox writes (WAV, FLAC, MP3)', (t) => {
    try {
      execFileSync('sox', ['--version'], { stdio: 'ignore' });
    } catch {
      t.skip('sox is not installed');
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'llamad-audio-'));
    try {
      // 1.5 s of a 440 Hz tone at 16 kHz mono.
      for (const ext of ['wav', 'flac', 'mp3']) {
        const file = join(dir, `tone.${ext}`);
        execFileSync('sox', ['-n', '-r', '16000', '-c', '1', file, 'synth', '1.5', 'sine', '440'], { stdio: 'ignore' });
        const info = probeAudio(readFileSync(file));
        assert.equal(info.format, ext);
        // MP3 frames hold 576 samples at 16 kHz (36 ms): the encoder pads the last one.
        assert.ok(
          Math.abs(info.durationSeconds - 1.5) < (ext === 'mp3' ? 0.1 : 1e-6),
          `${ext}: ${info.durationSeconds}`,
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
