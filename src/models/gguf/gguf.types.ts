/**
 * Types of the GGUF container format (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).
 *
 * A GGUF file is: magic "GGUF", u32 version, u64 tensor count, u64 metadata count, the metadata key/value pairs,
 * the tensor infos, padding up to `alignment`, then the tensor data. All integers are little-endian.
 */

/** Type tag of a metadata value (u32 on disk). */
export enum GgufValueType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

/**
 * A metadata value as read from a file. 64-bit integers are numbers when they fit in a safe integer
 * (|n| <= 2^53 - 1), else bigints; arrays are plain JS arrays of their items.
 */
export type GgufValue = number | bigint | boolean | string | GgufValue[];

/** One tensor's description from the tensor-info section (the data itself is never read). */
export interface GgufTensorInfo {
  /** Tensor name, e.g. "blk.0.attn_q.weight". */
  name: string;
  /** Dimensions in ggml order (ne0 first: the contiguous one), 1 to 4 entries. */
  shape: number[];
  /** ggml_type id (0 F32, 1 F16, 2 Q4_0, 8 Q8_0, 12 Q4_K, ...). */
  type: number;
  /** Name of `type` ('F32', 'F16', 'Q4_0', 'Q4_K', ...; 'unknown' for ids this code does not know). */
  typeName: string;
  /** Bytes from the start of the data section (`GgufFile.dataOffset`) to this tensor's data. */
  offset: number;
}

/** Header, metadata and tensor infos of a GGUF file. */
export interface GgufFile {
  /** Format version (2 or 3). */
  version: number;
  /**
   * Metadata key → value, in file order. An array skipped by `readGguf`'s `maxArrayItems` is a sparse array of its
   * length with no items (`Array.isArray` and `length` hold; its items read `undefined`).
   */
  metadata: Record<string, GgufValue>;
  /** Metadata key → on-disk value type (and item type for arrays); needed to copy values with their exact types. */
  types: Record<string, { type: GgufValueType; itemType?: GgufValueType }>;
  /** Tensor infos in file order. */
  tensors: GgufTensorInfo[];
  /** Data alignment in bytes (general.alignment, default 32). */
  alignment: number;
  /** Absolute byte offset of the tensor data section in the file. */
  dataOffset: number;
}
