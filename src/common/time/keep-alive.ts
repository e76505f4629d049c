import { InvalidRequestError } from '../errors';
import { parseGoDuration } from './go-duration';

/**
 * A keep-alive duration in milliseconds; `Infinity` means "never unload" (any negative input). `0` means "unload as
 * soon as idle".
 */
export type KeepAliveMs = number;

/** The default keep-alive when neither the request nor OLLAMA_KEEP_ALIVE set one: 5 minutes (spec §8). */
export const DEFAULT_KEEP_ALIVE_MS: KeepAliveMs = 5 * 60 * 1000;

/** Go's reflect.TypeOf(...).String() for a decoded JSON value, as Ollama prints it in `Unsupported type: '<t>'`. */
function goJsonTypeName(value: unknown): string {
  if (typeof value === 'boolean') return 'bool';
  if (Array.isArray(value)) return '[]interface {}';
  if (typeof value === 'object') return 'map[string]interface {}';
  return typeof value;
}

/**
 * Decodes a request's `keep_alive` like Ollama's `api.Duration.UnmarshalJSON` (reference/ollama-api.md §4.2):
 * a JSON number is seconds (fractions allowed), a string is a Go duration (`"10m"`, `"1h30m"`; a bare `"300"` is
 * rejected), negative values mean forever.
 * @returns milliseconds, `Infinity` for forever, or `undefined` when absent/null (the scheduler then keeps the
 *   runner's current value, or uses OLLAMA_KEEP_ALIVE for a new load).
 * @throws InvalidRequestError with Go's text (`time: missing unit in duration "300"`, `Unsupported type: 'bool'`).
 */
export function parseKeepAlive(value: unknown): KeepAliveMs | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new InvalidRequestError(`Unsupported type: 'float64'`, 'keep_alive');
    return value < 0 ? Infinity : value * 1000;
  }
  if (typeof value === 'string') {
    let ns: number;
    try {
      ns = parseGoDuration(value);
    } catch (err) {
      throw new InvalidRequestError((err as Error).message, 'keep_alive');
    }
    return ns < 0 ? Infinity : ns / 1e6;
  }
  throw new InvalidRequestError(`Unsupported type: '${goJsonTypeName(value)}'`, 'keep_alive');
}

/**
 * Decodes OLLAMA_KEEP_ALIVE like Ollama's envconfig.KeepAlive (§4.2, §7.6): a Go duration or an integer number of
 * seconds; negative = forever; unparsable or empty = the 5 minute default.
 * @returns milliseconds, `Infinity` for forever.
 */
export function parseKeepAliveEnv(raw: string | undefined): KeepAliveMs {
  if (raw === undefined || raw === '') return DEFAULT_KEEP_ALIVE_MS;
  let ms: number | undefined;
  try {
    ms = parseGoDuration(raw) / 1e6;
  } catch {
    if (/^[-+]?\d+$/.test(raw)) ms = Number(raw) * 1000;
  }
  if (ms === undefined) return DEFAULT_KEEP_ALIVE_MS;
  return ms < 0 ? Infinity : ms;
}

/**
 * parseKeepAlive for the compatibility routes (`/v1/*`, `/v1/messages`; beyond Ollama, whose compat layer has no
 * keep_alive — PR 11249): the same forms and meaning, but an error names the field (`invalid keep_alive: time:
 * invalid duration "soon"`), since OpenAI's and Anthropic's error bodies would otherwise show Go's bare text.
 * @returns milliseconds, `Infinity` for forever, `undefined` when absent/null.
 * @throws InvalidRequestError (`param: "keep_alive"`; 400 in each dialect's error shape).
 */
export function parseCompatKeepAlive(value: unknown): KeepAliveMs | undefined {
  try {
    return parseKeepAlive(value);
  } catch (err) {
    throw new InvalidRequestError(`invalid keep_alive: ${(err as Error).message}`, 'keep_alive');
  }
}
