import { InvalidConfigError } from '../common/errors';
import { parseGoDuration } from '../common/time';

/*
 * LLAMAD_MAX_AUDIO_SECONDS (issue 38; beyond Ollama): the longest audio clip a request may send, enforced by the native
 * engine while it decodes the clip (a longer one is a 400 `audio is <d> s long; the limit is <m> s
 * (LLAMAD_MAX_AUDIO_SECONDS)`), so one upload cannot make the daemon decode hours of PCM. Parsed by loadConfig
 * (daemon-config.ts) into DaemonConfig.maxAudioSeconds and handed to every runner task (NativeTaskParams.maxAudioSeconds).
 */

/** LLAMAD_MAX_AUDIO_SECONDS when unset: 10 minutes of audio (twenty 30 s encoder windows). */
export const DEFAULT_MAX_AUDIO_SECONDS = 600;

/**
 * Parses LLAMAD_MAX_AUDIO_SECONDS (already trimmed): a number of seconds (`600`, `90.5`) or a Go duration (`10m`,
 * `90s`); 0 = no bound.
 * @returns seconds (≥ 0); {@link DEFAULT_MAX_AUDIO_SECONDS} when unset.
 * @throws InvalidConfigError for a negative, non-finite or unparsable value.
 */
export function parseMaxAudioSecondsEnv(raw: string): number {
  if (raw === '') return DEFAULT_MAX_AUDIO_SECONDS;
  let seconds: number;
  if (/^\+?(\d+(\.\d*)?|\.\d+)$/.test(raw)) seconds = Number(raw);
  else {
    try {
      seconds = parseGoDuration(raw) / 1e9;
    } catch {
      seconds = NaN;
    }
  }
  if (!Number.isFinite(seconds) || seconds < 0) {
    throw new InvalidConfigError(
      `LLAMAD_MAX_AUDIO_SECONDS must be a number of seconds (600) or a duration (10m), 0 for no limit; got ${JSON.stringify(raw)}`,
    );
  }
  return seconds;
}
