// Test audio made at test time (nothing binary is committed): speech from espeak-ng, long clips from sox's synth, and
// MP3 / FLAC conversions by sox (Debian: espeak-ng, sox, libsox-fmt-mp3; .ci/run installs them).
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { missingPrograms } from './programs';

const run = promisify(execFile);

/** Containers the fixtures can be written in (the formats mtmd's decoder sniffs: RIFF/WAVE, MPEG audio, fLaC). */
export type AudioFormat = 'wav' | 'mp3' | 'flac';

/**
 * The skip reason for tests that make audio (node:test's `{ skip }`): undefined when espeak-ng and sox are on $PATH
 * and sox can write MP3, else what to install.
 */
export function missingAudioTools(): string | undefined {
  const missing = missingPrograms('espeak-ng', 'sox');
  if (missing) return missing;
  const help = spawnSync('sox', ['-h'], { encoding: 'utf8' });
  const formats = /AUDIO FILE FORMATS:(.*)/.exec(`${help.stdout ?? ''}`)?.[1]?.split(/\s+/) ?? [];
  return formats.includes('mp3') ? undefined : 'sox cannot write MP3: run "apt-get install -y libsox-fmt-mp3"';
}

/** Runs `fn` with a fresh private temporary directory, removed afterwards whatever happens. */
async function inTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'llamad-audio-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Converts `wav` (a file) to `format` with sox, 16 kHz mono; returns the resulting file's bytes. */
async function convert(dir: string, wav: string, format: AudioFormat): Promise<Buffer> {
  if (format === 'wav') return readFile(wav);
  const out = join(dir, `out.${format}`);
  await run('sox', [wav, '-r', '16000', '-c', '1', out]);
  return readFile(out);
}

/**
 * Spoken `text` (espeak-ng's default English voice, 22.05 kHz mono WAV, about 0.4 s per word) as a file in
 * `format`. Different texts give different samples; the same text gives the same bytes on one machine.
 * @throws Error when espeak-ng or sox is missing or fails
 */
export function speech(text: string, format: AudioFormat = 'wav'): Promise<Buffer> {
  return inTempDir(async (dir) => {
    const wav = join(dir, 'speech.wav');
    await run('espeak-ng', ['-w', wav, text]);
    return convert(dir, wav, format);
  });
}

/**
 * A `seconds`-long 16 kHz mono clip (16-bit WAV, or `format`): a sine tone at `hz` (default 440 Hz) at half scale,
 * for long clips (e.g. 61 s = three 30 s chunks, or one past a duration limit). A 700 s WAV is about 22 MB.
 * @throws Error when sox is missing or fails
 */
export function tone(seconds: number, format: AudioFormat = 'wav', hz = 440): Promise<Buffer> {
  return inTempDir(async (dir) => {
    const wav = join(dir, 'tone.wav');
    await run('sox', [
      '-n',
      '-r',
      '16000',
      '-c',
      '1',
      '-b',
      '16',
      wav,
      'synth',
      String(seconds),
      'sine',
      String(hz),
      'vol',
      '0.5',
    ]);
    return convert(dir, wav, format);
  });
}

/**
 * The number of 3000-frame (30 s) chunks mtmd's Whisper preprocessor (qwen2a, ultravox, voxtral) makes of a clip of
 * `seconds` at 16 kHz: it appends 30 s of silence, takes one mel frame per 160 samples (n / 160 + 3001 frames) and
 * drops the last incomplete chunk, so a clip under 29.99 s is one chunk, 30 s two, 61 s three
 * (vendor/llama.cpp/tools/mtmd/mtmd-audio.cpp log_mel_spectrogram, mtmd_audio_preprocessor_whisper::preprocess).
 */
export function whisperChunks(seconds: number): number {
  return Math.floor((Math.floor((seconds * 16000) / 160) + 3001) / 3000);
}

/**
 * Duration in seconds of a PCM WAV file (RIFF/WAVE with `fmt ` and `data` chunks): data bytes ÷ (sample rate ×
 * channels × bytes per sample).
 * @throws Error when `wav` is not a PCM WAV file
 */
export function wavSeconds(wav: Buffer): number {
  if (wav.toString('latin1', 0, 4) !== 'RIFF' || wav.toString('latin1', 8, 12) !== 'WAVE') throw new Error('not a WAV');
  let rate = 0;
  let frameBytes = 0;
  for (let at = 12; at + 8 <= wav.length; ) {
    const id = wav.toString('latin1', at, at + 4);
    const size = wav.readUInt32LE(at + 4);
    if (id === 'fmt ') {
      rate = wav.readUInt32LE(at + 12);
      frameBytes = wav.readUInt16LE(at + 20); // block align: channels × bytes per sample
    } else if (id === 'data' && rate > 0 && frameBytes > 0) {
      // a size past the end (a WAV written while streaming) counts what the file holds
      return Math.min(size, wav.length - at - 8) / (rate * frameBytes);
    }
    at += 8 + size + (size & 1);
  }
  throw new Error('WAV without fmt/data chunks');
}
