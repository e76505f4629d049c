import { InvalidRequestError } from '../../../common/errors';
import { AudioFormat, sniffAudio } from '../../../generation';

/** The audio containers the engine decodes (mtmd's helper, through miniaudio: WAV, MP3, FLAC). */
export type AudioContainer = AudioFormat;

/** What the header (or the MP3 frame headers) of an audio file says. */
export interface AudioFileInfo {
  format: AudioContainer;
  /**
   * Length of the audio in seconds, from the header: WAV data size / byte rate, FLAC STREAMINFO total samples /
   * sample rate, MP3 the sum of its frames' samples / sample rate. 0 when the file does not say (a FLAC stream
   * written without its total).
   */
  durationSeconds: number;
}

/** The message for bytes that are none of the supported containers. */
export const UNSUPPORTED_AUDIO_MESSAGE = 'unsupported audio format: send WAV, MP3 or FLAC';

/**
 * Sniffs an audio file from its bytes as the engine does (sniffAudio, generation/prompt/audio.ts: `RIFF….WAVE`,
 * `fLaC`, an `ID3` tag or an MPEG audio frame sync) and reads its duration from the header. The file name and Content-Type are not trusted.
 * @throws InvalidRequestError (400, param `file`): `audio file is empty` (Ollama's text), {@link UNSUPPORTED_AUDIO_MESSAGE}
 *   for anything else, `invalid WAV file: …` / `invalid FLAC file: …` / `invalid MP3 file: no MPEG audio frame` for
 *   a recognized container whose header cannot be read.
 */
export function probeAudio(bytes: Uint8Array): AudioFileInfo {
  if (bytes.length === 0) throw new InvalidRequestError('audio file is empty', 'file');
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (sniffAudio(buf)) {
    case 'wav':
      return { format: 'wav', durationSeconds: wavDuration(buf) };
    case 'flac':
      return { format: 'flac', durationSeconds: flacDuration(buf) };
    case 'mp3':
      return { format: 'mp3', durationSeconds: mp3Duration(buf) };
    case undefined:
      throw new InvalidRequestError(UNSUPPORTED_AUDIO_MESSAGE, 'file');
  }
}

/** WAV: walks the RIFF chunks for `fmt ` (byte rate) and `data` (size; a streamed file's oversized size is clamped). */
function wavDuration(buf: Buffer): number {
  let byteRate = 0;
  let offset = 12;
  while (offset + 8 <= buf.length) {
    const id = buf.toString('latin1', offset, offset + 4);
    const size = buf.readUInt32LE(offset + 4);
    const start = offset + 8;
    if (id === 'fmt ') {
      if (size < 16 || start + 16 > buf.length) {
        throw new InvalidRequestError('invalid WAV file: short fmt chunk', 'file');
      }
      byteRate = buf.readUInt32LE(start + 8);
    } else if (id === 'data') {
      if (byteRate === 0) throw new InvalidRequestError('invalid WAV file: no fmt chunk before the data', 'file');
      return Math.min(size, buf.length - start) / byteRate;
    }
    offset = start + size + (size % 2); // chunks are padded to an even size
  }
  throw new InvalidRequestError('invalid WAV file: no data chunk', 'file');
}

/** FLAC: the STREAMINFO block that must come first (20-bit sample rate, 36-bit total samples). */
function flacDuration(buf: Buffer): number {
  if (buf.length < 8 + 18 || (buf[4] & 0x7f) !== 0) {
    throw new InvalidRequestError('invalid FLAC file: no STREAMINFO', 'file');
  }
  const info = 8;
  const sampleRate = (buf[info + 10] << 12) | (buf[info + 11] << 4) | (buf[info + 12] >> 4);
  const totalSamples = (buf[info + 13] & 0x0f) * 2 ** 32 + buf.readUInt32BE(info + 14);
  if (sampleRate === 0) throw new InvalidRequestError('invalid FLAC file: sample rate 0', 'file');
  return totalSamples / sampleRate;
}

const MP3_BITRATES_KBPS: Record<string, readonly number[]> = {
  '1-1': [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
  '1-2': [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
  '1-3': [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  '2-1': [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
  '2-2': [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  '2-3': [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
};
/** Sample rates by MPEG version bits (0 = 2.5, 2 = 2, 3 = 1) and index. */
const MP3_SAMPLE_RATES: Record<number, readonly number[]> = {
  0: [11025, 12000, 8000],
  2: [22050, 24000, 16000],
  3: [44100, 48000, 32000],
};

/** One MPEG audio frame header at `offset`: its length in bytes and its samples, or undefined when there is none. */
export function readMp3Frame(
  buf: Buffer,
  offset: number,
): { bytes: number; samples: number; sampleRate: number } | undefined {
  if (offset + 4 > buf.length || buf[offset] !== 0xff || (buf[offset + 1] & 0xe0) !== 0xe0) return undefined;
  const versionBits = (buf[offset + 1] >> 3) & 3;
  const layerBits = (buf[offset + 1] >> 1) & 3;
  const bitrateIndex = buf[offset + 2] >> 4;
  const rateIndex = (buf[offset + 2] >> 2) & 3;
  const padding = (buf[offset + 2] >> 1) & 1;
  if (versionBits === 1 || layerBits === 0 || bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3) {
    return undefined; // reserved version/layer, free-format or bad bitrate, reserved rate
  }
  const layer = 4 - layerBits; // 3 → I, 2 → II, 1 → III
  const mpeg1 = versionBits === 3;
  const bitrate = MP3_BITRATES_KBPS[`${mpeg1 ? 1 : 2}-${layer}`][bitrateIndex] * 1000;
  const sampleRate = MP3_SAMPLE_RATES[versionBits][rateIndex];
  if (layer === 1) return { bytes: (Math.floor((12 * bitrate) / sampleRate) + padding) * 4, samples: 384, sampleRate };
  const samples = layer === 3 && !mpeg1 ? 576 : 1152;
  return { bytes: Math.floor(((samples / 8) * bitrate) / sampleRate) + padding, samples, sampleRate };
}

/** MP3: skips ID3v2 tags, then sums the frames' samples (resyncing over junk between frames). */
function mp3Duration(buf: Buffer): number {
  let offset = 0;
  while (offset + 10 <= buf.length && buf.toString('latin1', offset, offset + 3) === 'ID3') {
    const size =
      ((buf[offset + 6] & 0x7f) << 21) |
      ((buf[offset + 7] & 0x7f) << 14) |
      ((buf[offset + 8] & 0x7f) << 7) |
      (buf[offset + 9] & 0x7f);
    offset += 10 + size + (buf[offset + 5] & 0x10 ? 10 : 0);
  }
  let seconds = 0;
  let frames = 0;
  while (offset + 4 <= buf.length) {
    const frame = readMp3Frame(buf, offset);
    // A frame is believed when the next one follows it (or the file or an ID3v1 `TAG` starts): random 0xFFEx bytes
    // are skipped.
    const next = frame ? offset + frame.bytes : 0;
    const followed = next + 4 > buf.length || buf.toString('latin1', next, next + 3) === 'TAG';
    if (frame && (followed || readMp3Frame(buf, next) !== undefined)) {
      seconds += frame.samples / frame.sampleRate;
      frames++;
      offset = next;
    } else {
      offset++;
    }
  }
  if (frames === 0) throw new InvalidRequestError('invalid MP3 file: no MPEG audio frame', 'file');
  return seconds;
}
