import type { NativeQuantType } from '../../binding';
import { homedir } from 'node:os';
import { isAbsolute } from 'node:path';
import { InvalidRequestError } from '../common/errors';
import { GoTemplate, TemplateBudgetError, probeTemplateBudget } from '../templates';

/**
 * Small pure helpers of /api/create and /api/blobs (reference/ollama-api.md §3.9, §3.10): digest validation,
 * quantization type names, template checking.
 */

/**
 * A FROM (or DRAFT) value that names a file rather than a model: absolute (POSIX or a Windows drive), explicitly
 * relative, home-relative, `.`/`..`/`~`, containing a backslash, or *.gguf.
 */
export function looksLikePath(from: string): boolean {
  return (
    isAbsolute(from) ||
    from === '.' ||
    from === '..' ||
    from === '~' ||
    from.startsWith('./') ||
    from.startsWith('../') ||
    from.startsWith('~/') ||
    from.includes('\\') ||
    /^[A-Za-z]:[\\/]/.test(from) ||
    /\.gguf$/i.test(from)
  );
}

/** `~` and `~/…` → the home directory. */
export function expandHome(p: string): string {
  return p === '~' || p.startsWith('~/') ? homedir() + p.slice(1) : p;
}

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
 * Parses a TEMPLATE / `template` as a Go template, as Ollama's create does, and (beyond Ollama, issue 32) executes it
 * once under the execution budget against sample values (probeTemplateBudget: a chat with system, tool call, tool
 * answer and thinking; a FIM request), so a template that can never finish is refused now rather than at every later
 * request. Errors on the sample values other than the budget are not refusals. The renders do not hold the event
 * loop (probeTemplateBudget: past a small inline budget they run in a worker thread).
 * @throws InvalidRequestError `template error: <Go parser message>` (§5.2); `template: execution budget exceeded:
 *   more than N steps` / `… characters of output` (docs/security.md "Budgets").
 */
export async function checkGoTemplate(text: string): Promise<void> {
  let template: GoTemplate;
  try {
    template = GoTemplate.parse(text);
  } catch (err) {
    throw new InvalidRequestError(`template error: ${(err as Error).message}`, 'template');
  }
  try {
    await probeTemplateBudget(template);
  } catch (err) {
    if (err instanceof TemplateBudgetError) throw new InvalidRequestError(err.message, 'template', { cause: err });
    throw err;
  }
}

/**
 * Approximate bits per weight of each quantization type (llama.cpp block sizes; the K-quant mixes (`_M`, `Q2_K`)
 * averaged over a typical model). Only used to estimate quantization progress.
 */
const QUANT_BITS: Record<NativeQuantType, number> = {
  F32: 32,
  F16: 16,
  BF16: 16,
  Q8_0: 8.5,
  Q6_K: 6.5625,
  Q5_K_M: 5.7,
  Q5_K_S: 5.5,
  Q5_1: 6,
  Q5_0: 5.5,
  Q4_K_M: 4.9,
  Q4_K_S: 4.5,
  Q4_1: 5,
  Q4_0: 4.5,
  Q3_K_M: 3.9,
  Q2_K: 2.9,
};

/**
 * Estimated size in bytes of a quantized GGUF: the source size scaled by the target's bits per weight over the
 * source's (`F32` 32, `F16`/`BF16` 16). Rough (norm vectors stay F32, K-quant mixes vary): progress only.
 * @param sourceBytes size of the source GGUF, bytes (≥ 0).
 * @param from the source file type (`F16`, `BF16`, `F32`, case-insensitive; anything else counts as 16 bits).
 * @returns bytes, at least 1.
 */
export function estimateQuantizedSize(sourceBytes: number, from: string, to: NativeQuantType): number {
  const fromBits = from.toUpperCase() === 'F32' ? 32 : 16;
  return Math.max(1, Math.round((sourceBytes * QUANT_BITS[to]) / fromBits));
}

/** Ollama's placeholder digest of quantization progress records (`quantizing F16 model to Q4_0`). */
export const QUANTIZE_PROGRESS_DIGEST = '0000000000000000000';

/**
 * A quantization's `completed` value: Ollama reports progress against the source layer's size (`total` = source
 * bytes, `completed` = fraction done × total). The fraction is the output file's current size over its estimated
 * final size, capped below 1 (the last record, sent when quantization finished, has completed = total).
 * @param outputBytes current size of the output file, bytes.
 * @param expectedBytes estimateQuantizedSize() of the output, bytes (> 0).
 * @param total the source size, bytes.
 * @returns an integer in [0, total - 1] (0 when total is 0).
 */
export function quantizeCompleted(outputBytes: number, expectedBytes: number, total: number): number {
  if (total <= 0) return 0;
  const fraction = Math.min(1, Math.max(0, outputBytes / expectedBytes));
  return Math.min(total - 1, Math.floor(fraction * total));
}
