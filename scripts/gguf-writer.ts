import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { GGML_TYPES, ggmlTensorBytes, GgufValueType, type GgufValue } from '../src/models/gguf';

/** One metadata entry to write. `itemType` is required when `type` is ARRAY (nested arrays are not supported). */
export interface GgufKv {
  key: string;
  type: GgufValueType;
  value: GgufValue;
  itemType?: GgufValueType;
}

/** One tensor to write. */
export interface GgufTensorSpec {
  name: string;
  /** Dimensions in ggml order (ne0 first), 1 to 4 positive integers; ne0 must be a multiple of the type's block size. */
  shape: number[];
  /** ggml_type id: 0 F32 and 1 F16 in practice; any type with a known layout is accepted (raw bytes). */
  type: number;
  /**
   * Writes the tensor's data into `out`, a zeroed buffer of exactly the tensor's byte size (elements × bytes per
   * element; for block types elements / blockSize × typeSize) whose byteOffset is 0, so typed-array views over
   * `out.buffer` are aligned. Called once, in tensor order; the buffer is reused afterwards.
   */
  fill: (out: Buffer) => void;
}

const GGUF_VERSION = 3;
const DEFAULT_ALIGNMENT = 32;

/** Growable little-endian byte sink for the header. */
class ByteSink {
  private buf = Buffer.alloc(1 << 16);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.length + n) cap *= 2;
    const next = Buffer.alloc(cap);
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  u8(v: number): void {
    this.room(1);
    this.buf.writeUInt8(v, this.length);
    this.length += 1;
  }
  i8(v: number): void {
    this.room(1);
    this.buf.writeInt8(v, this.length);
    this.length += 1;
  }
  u16(v: number): void {
    this.room(2);
    this.buf.writeUInt16LE(v, this.length);
    this.length += 2;
  }
  i16(v: number): void {
    this.room(2);
    this.buf.writeInt16LE(v, this.length);
    this.length += 2;
  }
  u32(v: number): void {
    this.room(4);
    this.buf.writeUInt32LE(v, this.length);
    this.length += 4;
  }
  i32(v: number): void {
    this.room(4);
    this.buf.writeInt32LE(v, this.length);
    this.length += 4;
  }
  f32(v: number): void {
    this.room(4);
    this.buf.writeFloatLE(v, this.length);
    this.length += 4;
  }
  f64(v: number): void {
    this.room(8);
    this.buf.writeDoubleLE(v, this.length);
    this.length += 8;
  }
  u64(v: bigint): void {
    this.room(8);
    this.buf.writeBigUInt64LE(v, this.length);
    this.length += 8;
  }
  i64(v: bigint): void {
    this.room(8);
    this.buf.writeBigInt64LE(v, this.length);
    this.length += 8;
  }
  string(s: string): void {
    const n = Buffer.byteLength(s, 'utf8');
    this.u64(BigInt(n));
    this.room(n);
    this.buf.write(s, this.length, n, 'utf8');
    this.length += n;
  }
  pad(alignment: number): void {
    const n = (alignment - (this.length % alignment)) % alignment;
    this.room(n);
    this.buf.fill(0, this.length, this.length + n);
    this.length += n;
  }
  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

const INT_RANGES: Partial<Record<GgufValueType, [number, number]>> = {
  [GgufValueType.UINT8]: [0, 0xff],
  [GgufValueType.INT8]: [-0x80, 0x7f],
  [GgufValueType.UINT16]: [0, 0xffff],
  [GgufValueType.INT16]: [-0x8000, 0x7fff],
  [GgufValueType.UINT32]: [0, 0xffffffff],
  [GgufValueType.INT32]: [-0x80000000, 0x7fffffff],
};

function typeLabel(type: GgufValueType): string {
  return GgufValueType[type] ?? `type ${String(type)}`;
}

function encodeValue(sink: ByteSink, type: GgufValueType, value: GgufValue, what: string): void {
  const bad = (expected: string): never => {
    throw new TypeError(`${what}: ${typeLabel(type)} needs ${expected}, got ${typeof value} ${String(value)}`);
  };
  switch (type) {
    case GgufValueType.UINT8:
    case GgufValueType.INT8:
    case GgufValueType.UINT16:
    case GgufValueType.INT16:
    case GgufValueType.UINT32:
    case GgufValueType.INT32: {
      const [lo, hi] = INT_RANGES[type] as [number, number];
      if (typeof value !== 'number' || !Number.isInteger(value) || value < lo || value > hi) {
        bad(`an integer in [${lo}, ${hi}]`);
      }
      const v = value as number;
      if (type === GgufValueType.UINT8) sink.u8(v);
      else if (type === GgufValueType.INT8) sink.i8(v);
      else if (type === GgufValueType.UINT16) sink.u16(v);
      else if (type === GgufValueType.INT16) sink.i16(v);
      else if (type === GgufValueType.UINT32) sink.u32(v);
      else sink.i32(v);
      return;
    }
    case GgufValueType.UINT64:
    case GgufValueType.INT64: {
      let v: bigint;
      if (typeof value === 'bigint') v = value;
      else if (typeof value === 'number' && Number.isSafeInteger(value)) v = BigInt(value);
      else return bad('a safe integer or a bigint');
      const unsigned = type === GgufValueType.UINT64;
      const min = unsigned ? 0n : -(1n << 63n);
      const max = unsigned ? (1n << 64n) - 1n : (1n << 63n) - 1n;
      if (v < min || v > max) bad(`a value in [${min}, ${max}]`);
      if (unsigned) sink.u64(v);
      else sink.i64(v);
      return;
    }
    case GgufValueType.FLOAT32:
    case GgufValueType.FLOAT64:
      if (typeof value !== 'number') bad('a number');
      if (type === GgufValueType.FLOAT32) sink.f32(value as number);
      else sink.f64(value as number);
      return;
    case GgufValueType.BOOL:
      if (typeof value !== 'boolean') bad('a boolean');
      sink.u8(value ? 1 : 0);
      return;
    case GgufValueType.STRING:
      if (typeof value !== 'string') bad('a string');
      sink.string(value as string);
      return;
    case GgufValueType.ARRAY:
      throw new TypeError(`${what}: nested arrays are not supported by the writer`);
    default:
      throw new TypeError(`${what}: unknown value type ${String(type)}`);
  }
}

function encodeKv(sink: ByteSink, kv: GgufKv): void {
  sink.string(kv.key);
  sink.u32(kv.type);
  if (kv.type !== GgufValueType.ARRAY) {
    encodeValue(sink, kv.type, kv.value, kv.key);
    return;
  }
  if (!Array.isArray(kv.value)) throw new TypeError(`${kv.key}: ARRAY needs an array value`);
  if (kv.itemType === undefined) throw new TypeError(`${kv.key}: ARRAY needs an itemType`);
  sink.u32(kv.itemType);
  sink.u64(BigInt(kv.value.length));
  for (let i = 0; i < kv.value.length; i++) encodeValue(sink, kv.itemType, kv.value[i], `${kv.key}[${i}]`);
}

function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}

/**
 * Writes a GGUF v3 file: header, metadata, tensor infos, then each tensor's data padded to `alignment`.
 *
 * The file is written to `path + '.tmp'` and renamed over `path` once complete (the temporary file is removed on
 * failure). Tensor data is streamed: one reusable buffer of the largest tensor's size (two, so that filling the next
 * tensor overlaps writing the previous one) — memory is bounded by the largest tensor, not the file.
 *
 * When `alignment` is not 32, a `general.alignment` u32 entry is added (unless `kvs` already has one, which must then
 * be equal).
 *
 * @param path destination file
 * @param kvs metadata entries, written in order; keys must be unique
 * @param tensors tensors, written in order; names must be unique
 * @param alignment data alignment in bytes, a power of two (default 32)
 * @throws TypeError / RangeError for invalid entries (duplicate key, value not matching its type, bad shape,
 *   unknown tensor type, block-size mismatch); fs errors from writing
 */
export async function writeGguf(
  path: string,
  kvs: GgufKv[],
  tensors: GgufTensorSpec[],
  alignment: number = DEFAULT_ALIGNMENT,
): Promise<void> {
  if (!Number.isInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
    throw new RangeError(`alignment must be a power of two, got ${alignment}`);
  }
  const entries = [...kvs];
  const keys = new Set<string>();
  for (const kv of entries) {
    if (keys.has(kv.key)) throw new TypeError(`duplicate metadata key "${kv.key}"`);
    keys.add(kv.key);
  }
  const explicit = entries.find((kv) => kv.key === 'general.alignment');
  if (explicit) {
    if (explicit.type !== GgufValueType.UINT32 || explicit.value !== alignment) {
      throw new TypeError(`general.alignment entry (${String(explicit.value)}) does not match alignment ${alignment}`);
    }
  } else if (alignment !== DEFAULT_ALIGNMENT) {
    entries.push({ key: 'general.alignment', type: GgufValueType.UINT32, value: alignment });
  }

  // Layout of the data section.
  const names = new Set<string>();
  const sizes: number[] = [];
  const offsets: number[] = [];
  let dataSize = 0;
  let maxSize = 0;
  for (const t of tensors) {
    if (names.has(t.name)) throw new TypeError(`duplicate tensor name "${t.name}"`);
    names.add(t.name);
    if (t.shape.length < 1 || t.shape.length > 4 || !t.shape.every((d) => Number.isSafeInteger(d) && d > 0)) {
      throw new RangeError(`tensor "${t.name}": shape must be 1 to 4 positive integers, got [${t.shape.join(', ')}]`);
    }
    const info = GGML_TYPES.get(t.type);
    if (!info) throw new TypeError(`tensor "${t.name}": unknown ggml type ${t.type}`);
    const bytes = ggmlTensorBytes(t.type, t.shape);
    if (bytes === null) {
      throw new RangeError(
        `tensor "${t.name}": ne0 ${t.shape[0]} is not a multiple of ${info.name}'s block ${info.blockSize}`,
      );
    }
    offsets.push(dataSize);
    sizes.push(bytes);
    dataSize = alignUp(dataSize + bytes, alignment);
    maxSize = Math.max(maxSize, bytes);
  }

  const header = new ByteSink();
  header.u32(0x46554747); // "GGUF"
  header.u32(GGUF_VERSION);
  header.u64(BigInt(tensors.length));
  header.u64(BigInt(entries.length));
  for (const kv of entries) encodeKv(header, kv);
  tensors.forEach((t, i) => {
    header.string(t.name);
    header.u32(t.shape.length);
    for (const d of t.shape) header.u64(BigInt(d));
    header.u32(t.type);
    header.u64(BigInt(offsets[i]));
  });
  header.pad(alignment);

  const tmp = `${path}.tmp`;
  let fh: FileHandle | undefined;
  let pending: Promise<void> = Promise.resolve();
  try {
    fh = await open(tmp, 'w');
    await writeAll(fh, header.bytes());
    // Two buffers: fill one while the other is being written by the thread pool.
    const buffers = maxSize > 0 ? [Buffer.alloc(maxSize), Buffer.alloc(tensors.length > 1 ? maxSize : 0)] : [];
    const zeros = Buffer.alloc(alignment);
    for (let i = 0; i < tensors.length; i++) {
      const out = buffers[i % 2].subarray(0, sizes[i]);
      out.fill(0);
      tensors[i].fill(out);
      await pending;
      const padding = alignUp(sizes[i], alignment) - sizes[i];
      const handle = fh;
      pending = writeAll(handle, out).then(() =>
        padding > 0 ? writeAll(handle, zeros.subarray(0, padding)) : undefined,
      );
    }
    await pending;
    await fh.close();
    fh = undefined;
    await rename(tmp, path);
  } catch (err) {
    await pending.catch(() => undefined);
    await fh?.close().catch(() => undefined);
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
}

async function writeAll(fh: FileHandle, data: Buffer): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await fh.write(data, done, data.length - done);
    done += bytesWritten;
  }
}
