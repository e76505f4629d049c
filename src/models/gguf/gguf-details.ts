import type { GgufFile, GgufTensorInfo, GgufValue } from './gguf.types';
import { FILE_TYPE_NAMES, GGML_TYPES } from './ggml-types';
import { humanNumber } from '../../common/format';

/**
 * Name of a ggml tensor type: 0 → 'F32', 1 → 'F16', 2 → 'Q4_0', 8 → 'Q8_0', 12 → 'Q4_K', 30 → 'BF16', ...
 * @returns the name, or 'unknown' for ids that are not (or no longer) ggml types
 */
export function ggmlTypeName(type: number): string {
  return GGML_TYPES.get(type)?.name ?? 'unknown';
}

/**
 * Name of a llama.cpp file type (general.file_type, enum llama_ftype) as Ollama shows it in
 * `details.quantization_level`: 0 → 'F32', 1 → 'F16', 2 → 'Q4_0', 7 → 'Q8_0', 14 → 'Q4_K_S', 15 → 'Q4_K_M',
 * 32 → 'BF16', ...
 * @returns the name, or 'unknown' for values llama.cpp does not define
 */
export function fileTypeName(fileType: number): string {
  return FILE_TYPE_NAMES.get(fileType) ?? 'unknown';
}

/**
 * Ollama's human parameter count (format.HumanNumber), used for `details.parameter_size`:
 * ≥ 1e9 → billions with one decimal ('1.0B' for 1.04e9, '8.0B' for 8_030_261_248, whole numbers bare: '7B');
 * ≥ 1e6 → millions with two decimals ('4.39M', '494.03M', whole numbers bare: '567M');
 * ≥ 1e3 → rounded thousands ('1K'); smaller numbers as they are.
 * @param n a parameter count (non-negative; fractions are truncated)
 * @throws RangeError for negative or non-finite input
 */
export function formatParameterCount(n: number): string {
  if (!Number.isFinite(n) || n < 0) throw new RangeError(`parameter count must be a non-negative number, got ${n}`);
  return humanNumber(n);
}

/** Facts about a model for `/api/show`, `/api/tags` and model creation. */
export interface GgufModelDetails {
  /** general.architecture, e.g. 'llama', 'bert' ('unknown' when missing). */
  architecture: string;
  /** Number of weights: general.parameter_count, else the sum of all tensors' element counts. */
  parameterCount: number;
  /** Quantization level name ('F16', 'Q4_0', 'Q4_K_M', ...): from general.file_type, else inferred from tensors. */
  fileType: string;
  /** `<arch>.context_length`: training context, tokens. */
  contextLength?: number;
  /** `<arch>.embedding_length`: hidden size. */
  embeddingLength?: number;
  /** tokenizer.chat_template (Jinja text). */
  chatTemplate?: string;
  /** `<arch>.pooling_type` (llama_pooling_type: 0 none, 1 mean, 2 cls, 3 last, 4 rank). */
  poolingType?: number;
}

/** Tensor type name → the file type a model mostly made of it is reported as. */
const FILE_TYPE_BY_TENSOR_TYPE: Record<string, string> = {
  F32: 'F32',
  F16: 'F16',
  BF16: 'BF16',
  Q4_0: 'Q4_0',
  Q4_1: 'Q4_1',
  Q5_0: 'Q5_0',
  Q5_1: 'Q5_1',
  Q8_0: 'Q8_0',
  Q2_K: 'Q2_K',
  Q3_K: 'Q3_K_M',
  Q4_K: 'Q4_K_M',
  Q5_K: 'Q5_K_M',
  Q6_K: 'Q6_K',
  IQ2_XXS: 'IQ2_XXS',
  IQ2_XS: 'IQ2_XS',
  IQ3_XXS: 'IQ3_XXS',
  IQ1_S: 'IQ1_S',
  IQ4_NL: 'IQ4_NL',
  IQ3_S: 'IQ3_S',
  IQ2_S: 'IQ2_S',
  IQ4_XS: 'IQ4_XS',
  IQ1_M: 'IQ1_M',
  TQ1_0: 'TQ1_0',
  TQ2_0: 'TQ2_0',
  MXFP4: 'MXFP4',
  NVFP4: 'NVFP4',
  Q1_0: 'Q1_0',
  Q2_0: 'Q2_0',
};

/**
 * Guesses the file type from the tensor types the way llama.cpp does when general.file_type is missing: the type
 * held by the most tensors, counting only matrices (≥ 2 dimensions) when there are any.
 */
function inferFileType(tensors: readonly GgufTensorInfo[]): string {
  const matrices = tensors.filter((t) => t.shape.length >= 2);
  const counts = new Map<string, number>();
  for (const t of matrices.length > 0 ? matrices : tensors) counts.set(t.typeName, (counts.get(t.typeName) ?? 0) + 1);
  let best: string | undefined;
  let bestCount = 0;
  for (const [name, count] of counts) {
    if (count > bestCount) [best, bestCount] = [name, count];
  }
  return best === undefined ? 'unknown' : (FILE_TYPE_BY_TENSOR_TYPE[best] ?? 'unknown');
}

function asNumber(v: GgufValue | undefined): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  return undefined;
}

function own(file: GgufFile, key: string): GgufValue | undefined {
  return Object.prototype.hasOwnProperty.call(file.metadata, key) ? file.metadata[key] : undefined;
}

/**
 * Summarises a parsed GGUF file (see GgufModelDetails). Never throws: missing or mistyped keys are left out or
 * replaced by what the tensors imply.
 */
export function modelDetails(file: GgufFile): GgufModelDetails {
  const archValue = own(file, 'general.architecture');
  const architecture = typeof archValue === 'string' && archValue !== '' ? archValue : 'unknown';

  let parameterCount = asNumber(own(file, 'general.parameter_count'));
  if (parameterCount === undefined || parameterCount <= 0) {
    parameterCount = 0;
    for (const t of file.tensors) parameterCount += t.shape.reduce((a, b) => a * b, 1);
  }

  const ft = asNumber(own(file, 'general.file_type'));
  const fileType = ft !== undefined && fileTypeName(ft) !== 'unknown' ? fileTypeName(ft) : inferFileType(file.tensors);

  const details: GgufModelDetails = { architecture, parameterCount, fileType };
  const contextLength = asNumber(own(file, `${architecture}.context_length`));
  if (contextLength !== undefined) details.contextLength = contextLength;
  const embeddingLength = asNumber(own(file, `${architecture}.embedding_length`));
  if (embeddingLength !== undefined) details.embeddingLength = embeddingLength;
  const chatTemplate = own(file, 'tokenizer.chat_template');
  if (typeof chatTemplate === 'string') details.chatTemplate = chatTemplate;
  const poolingType = asNumber(own(file, `${architecture}.pooling_type`));
  if (poolingType !== undefined) details.poolingType = poolingType;
  return details;
}
