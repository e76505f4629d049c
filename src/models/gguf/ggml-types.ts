/**
 * Facts about ggml tensor types (enum ggml_type in ggml.h) and llama.cpp file types (enum llama_ftype in llama.h).
 */

/** Storage layout of one ggml type: `blockSize` elements are stored in `typeSize` bytes. */
export interface GgmlTypeInfo {
  name: string;
  /** Elements per block (1 for plain types). */
  blockSize: number;
  /** Bytes per block. */
  typeSize: number;
}

const QK_K = 256;

/** ggml_type id → layout. Ids missing here were removed from ggml (4, 5, 31-33, 36-38) or are newer than this table. */
export const GGML_TYPES: ReadonlyMap<number, GgmlTypeInfo> = new Map<number, GgmlTypeInfo>([
  [0, { name: 'F32', blockSize: 1, typeSize: 4 }],
  [1, { name: 'F16', blockSize: 1, typeSize: 2 }],
  [2, { name: 'Q4_0', blockSize: 32, typeSize: 2 + 16 }],
  [3, { name: 'Q4_1', blockSize: 32, typeSize: 2 + 2 + 16 }],
  [6, { name: 'Q5_0', blockSize: 32, typeSize: 2 + 4 + 16 }],
  [7, { name: 'Q5_1', blockSize: 32, typeSize: 2 + 2 + 4 + 16 }],
  [8, { name: 'Q8_0', blockSize: 32, typeSize: 2 + 32 }],
  [9, { name: 'Q8_1', blockSize: 32, typeSize: 2 + 2 + 32 }],
  [10, { name: 'Q2_K', blockSize: QK_K, typeSize: 2 + 2 + QK_K / 16 + QK_K / 4 }],
  [11, { name: 'Q3_K', blockSize: QK_K, typeSize: 2 + QK_K / 4 + QK_K / 8 + 12 }],
  [12, { name: 'Q4_K', blockSize: QK_K, typeSize: 2 + 2 + QK_K / 2 + 12 }],
  [13, { name: 'Q5_K', blockSize: QK_K, typeSize: 2 + 2 + QK_K / 2 + QK_K / 8 + 12 }],
  [14, { name: 'Q6_K', blockSize: QK_K, typeSize: 2 + QK_K / 2 + QK_K / 4 + QK_K / 16 }],
  [15, { name: 'Q8_K', blockSize: QK_K, typeSize: 4 + QK_K + QK_K / 8 }],
  [16, { name: 'IQ2_XXS', blockSize: QK_K, typeSize: 2 + QK_K / 4 }],
  [17, { name: 'IQ2_XS', blockSize: QK_K, typeSize: 2 + QK_K / 4 + QK_K / 32 }],
  [18, { name: 'IQ3_XXS', blockSize: QK_K, typeSize: 2 + QK_K / 4 + QK_K / 8 }],
  [19, { name: 'IQ1_S', blockSize: QK_K, typeSize: 2 + QK_K / 8 + QK_K / 16 }],
  [20, { name: 'IQ4_NL', blockSize: 32, typeSize: 2 + 16 }],
  [21, { name: 'IQ3_S', blockSize: QK_K, typeSize: 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4 }],
  [22, { name: 'IQ2_S', blockSize: QK_K, typeSize: 2 + QK_K / 4 + QK_K / 16 }],
  [23, { name: 'IQ4_XS', blockSize: QK_K, typeSize: 2 + 2 + QK_K / 2 + QK_K / 64 }],
  [24, { name: 'I8', blockSize: 1, typeSize: 1 }],
  [25, { name: 'I16', blockSize: 1, typeSize: 2 }],
  [26, { name: 'I32', blockSize: 1, typeSize: 4 }],
  [27, { name: 'I64', blockSize: 1, typeSize: 8 }],
  [28, { name: 'F64', blockSize: 1, typeSize: 8 }],
  [29, { name: 'IQ1_M', blockSize: QK_K, typeSize: QK_K / 8 + QK_K / 16 + QK_K / 32 }],
  [30, { name: 'BF16', blockSize: 1, typeSize: 2 }],
  [34, { name: 'TQ1_0', blockSize: QK_K, typeSize: 2 + 4 * 13 }],
  [35, { name: 'TQ2_0', blockSize: QK_K, typeSize: 2 + 64 }],
  [39, { name: 'MXFP4', blockSize: 32, typeSize: 1 + 16 }],
  [40, { name: 'NVFP4', blockSize: 64, typeSize: 4 + 32 }],
  [41, { name: 'Q1_0', blockSize: 128, typeSize: 2 + 16 }],
  [42, { name: 'Q2_0', blockSize: 64, typeSize: 2 + 16 }],
]);

/** ggml_type ids used by the writer and the generator. */
export const GGML_TYPE_F32 = 0;
export const GGML_TYPE_F16 = 1;

/**
 * llama_ftype (general.file_type) → the name Ollama shows as `quantization_level` (llama.cpp's enum name without
 * the LLAMA_FTYPE_MOSTLY_ / ALL_ prefix). 4 is Ollama's own MXFP4 file type (gpt-oss), 38 llama.cpp's MXFP4_MOE.
 */
export const FILE_TYPE_NAMES: ReadonlyMap<number, string> = new Map<number, string>([
  [0, 'F32'],
  [1, 'F16'],
  [2, 'Q4_0'],
  [3, 'Q4_1'],
  [4, 'MXFP4'],
  [7, 'Q8_0'],
  [8, 'Q5_0'],
  [9, 'Q5_1'],
  [10, 'Q2_K'],
  [11, 'Q3_K_S'],
  [12, 'Q3_K_M'],
  [13, 'Q3_K_L'],
  [14, 'Q4_K_S'],
  [15, 'Q4_K_M'],
  [16, 'Q5_K_S'],
  [17, 'Q5_K_M'],
  [18, 'Q6_K'],
  [19, 'IQ2_XXS'],
  [20, 'IQ2_XS'],
  [21, 'Q2_K_S'],
  [22, 'IQ3_XS'],
  [23, 'IQ3_XXS'],
  [24, 'IQ1_S'],
  [25, 'IQ4_NL'],
  [26, 'IQ3_S'],
  [27, 'IQ3_M'],
  [28, 'IQ2_S'],
  [29, 'IQ2_M'],
  [30, 'IQ4_XS'],
  [31, 'IQ1_M'],
  [32, 'BF16'],
  [36, 'TQ1_0'],
  [37, 'TQ2_0'],
  [38, 'MXFP4'],
  [39, 'NVFP4'],
  [40, 'Q1_0'],
  [41, 'Q2_0'],
]);

/**
 * Byte size of a tensor's data: elements / blockSize * typeSize.
 * @param shape dimensions in ggml order (ne0 first)
 * @returns bytes, or null when the type is unknown or ne0 is not a multiple of the type's block size
 */
export function ggmlTensorBytes(type: number, shape: readonly number[]): number | null {
  const info = GGML_TYPES.get(type);
  if (!info) return null;
  if (shape.length > 0 && shape[0] % info.blockSize !== 0) return null;
  let elements = 1;
  for (const d of shape) elements *= d;
  return (elements / info.blockSize) * info.typeSize;
}
