import type { NativeQuantType } from '../../binding';
import { InvalidRequestError } from '../common/errors';
import { GoTemplate } from '../templates';

/**
 * Small pure helpers of /api/create and /api/blobs (reference/ollama-api.md §3.9, §3.10): digest validation,
 * quantization type names, template checking.
 */

/** `^sha256[:-][0-9a-fA-F]{64}$` (§3.10). */
const DIGEST = /^sha256[:-]([0-9a-fA-F]{64})$/;

/**
 * Normalizes a client-supplied digest (`sha256:<hex>` or `sha256-<hex>`, any hex case) to `sha256:<lower hex>`.
 * @returns null when it does not match `^sha256[:-][0-9a-fA-F]{64}$`.
 */
export function normalizeDigest(input: string): string | null {
  const m = DIGEST.exec(input);
  return m ? `sha256:${m[1].toLowerCase()}` : null;
}

/**
 * normalizeDigest() or a 400.
 * @throws InvalidRequestError `invalid digest format` (§5.2).
 */
export function requireDigest(input: string, field = 'digest'): string {
  const d = normalizeDigest(input);
  if (!d) throw new InvalidRequestError('invalid digest format', field);
  return d;
}

/** A Modelfile FROM/ADAPTER value naming an uploaded blob: `@sha256:<hex>`, `sha256:<hex>` or `sha256-<hex>`. */
export function blobReference(value: string): string | null {
  return normalizeDigest(value.startsWith('@') ? value.slice(1) : value);
}

/** Quantization targets, in the order listed in the error message. */
export const QUANTIZE_TYPES: readonly NativeQuantType[] = [
  'F32',
  'F16',
  'BF16',
  'Q8_0',
  'Q6_K',
  'Q5_K_M',
  'Q5_K_S',
  'Q5_1',
  'Q5_0',
  'Q4_K_M',
  'Q4_K_S',
  'Q4_1',
  'Q4_0',
  'Q3_K_M',
  'Q2_K',
];

/** Short aliases (Ollama: `Q4_K` = Q4_K_M). */
const QUANTIZE_ALIASES: Record<string, NativeQuantType> = { Q4_K: 'Q4_K_M', Q5_K: 'Q5_K_M', Q3_K: 'Q3_K_M' };

/** File types a model may be quantized from (§3.9). */
export const QUANTIZABLE_SOURCES: readonly string[] = ['F16', 'BF16', 'F32'];

/**
 * A `quantize` value (case-insensitive) → the addon's type name.
 * @throws InvalidRequestError `unsupported quantization type X - supported types are F32, F16, …` (Ollama's wording,
 *   listing this daemon's types).
 */
export function parseQuantizeType(input: string): NativeQuantType {
  const upper = input.trim().toUpperCase();
  const alias = QUANTIZE_ALIASES[upper];
  if (alias) return alias;
  const found = QUANTIZE_TYPES.find((t) => t === upper);
  if (found) return found;
  throw new InvalidRequestError(
    `unsupported quantization type ${input} - supported types are ${QUANTIZE_TYPES.join(', ')}`,
    'quantize',
  );
}

/**
 * Checks that a source file type may be quantized.
 * @param fileType the source's `details.quantization_level` (`F16`, `Q4_0`, …).
 * @throws InvalidRequestError `quantization is only supported for F16, BF16 and F32 models` (§3.9).
 */
export function checkQuantizableSource(fileType: string): void {
  if (!QUANTIZABLE_SOURCES.includes(fileType.toUpperCase())) {
    throw new InvalidRequestError('quantization is only supported for F16, BF16 and F32 models', 'quantize');
  }
}

/**
 * Parses a TEMPLATE / `template` as a Go template, as Ollama's create does.
 * @throws InvalidRequestError `template error: <Go parser message>` (§5.2).
 */
export function checkGoTemplate(text: string): void {
  try {
    GoTemplate.parse(text);
  } catch (err) {
    throw new InvalidRequestError(`template error: ${(err as Error).message}`, 'template');
  }
}
