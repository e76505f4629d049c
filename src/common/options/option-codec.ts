import { InvalidRequestError } from '../errors';
import { DEPRECATED_OPTIONS, OPTION_TABLE, OptionMap, OptionValue } from './option-table';
import { splitRpcServers } from './rpc-servers';

/** The option names {@link decodeOptions} looks up, in table order. */
const OPTION_NAMES: readonly string[] = Object.keys(OPTION_TABLE);

/** Go's strconv.ParseBool accepted spellings. */
const GO_TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const GO_FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** Result of typing Modelfile PARAMETER strings. */
export interface FormattedParams {
  params: OptionMap;
  /** Deprecated names that were skipped (the caller logs them, like the CLI's `warning: parameter x is deprecated`). */
  deprecated: string[];
}

/**
 * Types Modelfile `PARAMETER` values like Ollama's `api.FormatParams` (reference/ollama-api.md §4.1, §10.5):
 * ints in base 10, floats, Go bools; `stop` keeps every value (repeated PARAMETER stop builds a list); other options
 * use their first value.
 * @param raw parameter name → every value given for it, in Modelfile order.
 * @throws InvalidRequestError `unknown parameter '<name>'`, `invalid int value [x]`, `invalid float value [x]`,
 *   `invalid bool value [x]`.
 */
export function formatParams(raw: ReadonlyMap<string, string[]>): FormattedParams {
  const params: OptionMap = {};
  const deprecated: string[] = [];
  for (const [key, values] of raw) {
    const spec = OPTION_TABLE[key];
    if (!spec) {
      if (DEPRECATED_OPTIONS.has(key)) {
        deprecated.push(key);
        continue;
      }
      throw new InvalidRequestError(`unknown parameter '${key}'`);
    }
    const shown = `[${values.join(' ')}]`;
    const first = values[0] ?? '';
    switch (spec.kind) {
      case 'int': {
        if (!/^[+-]?\d+$/.test(first)) throw new InvalidRequestError(`invalid int value ${shown}`);
        params[key] = Number(first);
        break;
      }
      case 'float': {
        const n = Number(first);
        if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(first) || !Number.isFinite(n)) {
          throw new InvalidRequestError(`invalid float value ${shown}`);
        }
        params[key] = n;
        break;
      }
      case 'bool': {
        if (GO_TRUE.has(first)) params[key] = true;
        else if (GO_FALSE.has(first)) params[key] = false;
        else throw new InvalidRequestError(`invalid bool value ${shown}`);
        break;
      }
      case 'string[]':
        if (key === 'rpc') {
          const { servers, invalid } = splitRpcServers(values);
          if (invalid.length > 0) {
            throw new InvalidRequestError(`invalid rpc value ${shown}: want host:port[,host:port…] or none`);
          }
          params[key] = servers;
        } else {
          params[key] = [...values];
        }
        break;
    }
  }
  return { params, deprecated };
}

/**
 * Decodes a request's `options` object like Ollama's `Options.FromMap` (§4.1): ints accept any JSON number (the
 * fraction is truncated), floats need a number, bools a boolean, `stop` an array of strings; `null` values are
 * skipped and unknown keys ignored, as are Modelfile-only options (`rpc`). Cost: one lookup per known option name,
 * whatever the number of keys in `options`.
 * @returns the known options, typed, in the table's order (OPTION_TABLE).
 * @throws InvalidRequestError `option "<k>" must be of type integer|float32|boolean|array`, or
 *   `option "<k>" must be of an array of strings`. (Ollama answers these with 500; the daemon uses 400 — see
 *   docs/architecture.md, deviations.)
 */
export function decodeOptions(options: Record<string, unknown> | undefined | null): OptionMap {
  const out: OptionMap = {};
  if (!options) return out;
  // Looked up name by name from the table (~40 names), never by walking the request's keys: an `options` object with
  // 10,000 unknown keys costs no more than a small one (Object.entries over a dictionary-mode object is ~1 µs a key,
  // on the event loop). The result is in table order (Ollama's Go map has no order either).
  for (const key of OPTION_NAMES) {
    if (!Object.prototype.hasOwnProperty.call(options, key)) continue;
    const value = options[key];
    const spec = OPTION_TABLE[key];
    if (spec.modelfileOnly || value === null || value === undefined) continue;
    const typeError = () => new InvalidRequestError(`option "${key}" must be of type ${spec.goType}`, `options.${key}`);
    let decoded: OptionValue;
    switch (spec.kind) {
      case 'int':
        if (typeof value !== 'number' || !Number.isFinite(value)) throw typeError();
        decoded = Math.trunc(value);
        break;
      case 'float':
        if (typeof value !== 'number' || !Number.isFinite(value)) throw typeError();
        decoded = value;
        break;
      case 'bool':
        if (typeof value !== 'boolean') throw typeError();
        decoded = value;
        break;
      case 'string[]':
        if (!Array.isArray(value)) throw typeError();
        if (!value.every((v) => typeof v === 'string')) {
          throw new InvalidRequestError(`option "${key}" must be of an array of strings`, `options.${key}`);
        }
        decoded = [...(value as string[])];
        break;
    }
    out[key] = decoded;
  }
  return out;
}

/**
 * Keeps only known options with values of the right type from a params layer read off disk (a store written by
 * another tool may contain anything). Wrong-typed values are dropped rather than failing the model.
 */
export function sanitizeStoredParams(value: unknown): OptionMap {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return {};
  const out: OptionMap = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    const spec = OPTION_TABLE[key];
    if (!spec) continue;
    if ((spec.kind === 'int' || spec.kind === 'float') && typeof v === 'number' && Number.isFinite(v)) {
      out[key] = spec.kind === 'int' ? Math.trunc(v) : v;
    } else if (spec.kind === 'bool' && typeof v === 'boolean') {
      out[key] = v;
    } else if (spec.kind === 'string[]' && Array.isArray(v) && v.every((s) => typeof s === 'string')) {
      out[key] = [...(v as string[])];
    } else if (spec.kind === 'string[]' && typeof v === 'string') {
      out[key] = [v];
    }
  }
  return out;
}
