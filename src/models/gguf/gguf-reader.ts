import { open, type FileHandle } from 'node:fs/promises';
import { GgufFormatError } from './gguf-format.error';
import { GgufValueType, type GgufFile, type GgufTensorInfo, type GgufValue } from './gguf.types';
import { GGML_TYPES, ggmlTensorBytes } from './ggml-types';

export { GgufFormatError } from './gguf-format.error';

/** "GGUF" read as a little-endian u32. */
const GGUF_MAGIC = 0x46554747;
const DEFAULT_ALIGNMENT = 32;
/** ggml's GGML_MAX_DIMS. */
const MAX_DIMS = 4;
/** Upper bound for one string value (chat templates are ~100 KB); guards against absurd lengths. */
const MAX_STRING_BYTES = 64 * 1024 * 1024;
/** Upper bound for the items of one metadata array (vocabularies are ~10^5-10^6 entries). */
const MAX_ARRAY_ITEMS = 1 << 24;
const READ_CHUNK = 1 << 20;

/** Smallest encoded size of one item of each value type, used to reject counts that cannot fit in the file. */
const MIN_ITEM_BYTES: Record<GgufValueType, number> = {
  [GgufValueType.UINT8]: 1,
  [GgufValueType.INT8]: 1,
  [GgufValueType.UINT16]: 2,
  [GgufValueType.INT16]: 2,
  [GgufValueType.UINT32]: 4,
  [GgufValueType.INT32]: 4,
  [GgufValueType.FLOAT32]: 4,
  [GgufValueType.BOOL]: 1,
  [GgufValueType.STRING]: 8,
  [GgufValueType.ARRAY]: 12,
  [GgufValueType.UINT64]: 8,
  [GgufValueType.INT64]: 8,
  [GgufValueType.FLOAT64]: 8,
};

/**
 * Positioned, buffered reads over a file handle. Primitive reads are synchronous and assume the bytes were made
 * available with `ensure(n)` first, so hot loops only await when the buffer actually runs dry.
 */
class BufferedFileReader {
  private buf = Buffer.allocUnsafe(READ_CHUNK);
  /** File offset of buf[0]. */
  private base = 0;
  /** Read position inside buf. */
  private pos = 0;
  /** End of valid data inside buf. */
  private end = 0;

  constructor(
    private readonly fh: FileHandle,
    readonly path: string,
    readonly size: number,
  ) {}

  /** Current absolute file offset. */
  get offset(): number {
    return this.base + this.pos;
  }

  /** Bytes left in the file after the current position. */
  get remaining(): number {
    return this.size - this.offset;
  }

  get buffered(): number {
    return this.end - this.pos;
  }

  fail(detail: string, offset: number = this.offset): never {
    throw new GgufFormatError(this.path, offset, detail);
  }

  /** Makes `n` bytes available at the current position; throws GgufFormatError when the file ends first. */
  async ensure(n: number, what = 'data'): Promise<void> {
    if (this.end - this.pos >= n) return;
    if (n > this.remaining) {
      this.fail(`file truncated: ${what} needs ${n} bytes, only ${this.remaining} left`);
    }
    // Move the unread tail to the front (or into a bigger buffer), then fill the rest.
    const keep = this.end - this.pos;
    if (n > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(n, this.buf.length * 2));
      this.buf.copy(bigger, 0, this.pos, this.end);
      this.buf = bigger;
    } else if (keep > 0) {
      this.buf.copy(this.buf, 0, this.pos, this.end);
    }
    this.base += this.pos;
    this.pos = 0;
    this.end = keep;
    while (this.end < n) {
      const want = Math.min(this.buf.length - this.end, this.size - (this.base + this.end));
      const { bytesRead } = await this.fh.read(this.buf, this.end, want, this.base + this.end);
      if (bytesRead === 0) this.fail(`file truncated: ${what} needs ${n} bytes`);
      this.end += bytesRead;
    }
  }

  u8(): number {
    return this.buf[this.pos++];
  }
  i8(): number {
    return this.buf.readInt8(this.pos++);
  }
  u16(): number {
    const v = this.buf.readUInt16LE(this.pos);
    this.pos += 2;
    return v;
  }
  i16(): number {
    const v = this.buf.readInt16LE(this.pos);
    this.pos += 2;
    return v;
  }
  u32(): number {
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  i32(): number {
    const v = this.buf.readInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  f32(): number {
    const v = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return v;
  }
  f64(): number {
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }
  u64(): bigint {
    const v = this.buf.readBigUInt64LE(this.pos);
    this.pos += 8;
    return v;
  }
  i64(): bigint {
    const v = this.buf.readBigInt64LE(this.pos);
    this.pos += 8;
    return v;
  }
  /** A u64 that must be a safe integer (counts, lengths, dimensions, offsets). */
  u64Number(what: string): number {
    const at = this.offset;
    const lo = this.buf.readUInt32LE(this.pos);
    const hi = this.buf.readUInt32LE(this.pos + 4);
    this.pos += 8;
    if (hi > 0x1fffff) this.fail(`${what} is absurdly large (${(BigInt(hi) << 32n) | BigInt(lo)})`, at);
    return hi * 0x100000000 + lo;
  }
  /**
   * Reads a u64-length-prefixed string when it is entirely buffered, else returns undefined and consumes nothing
   * (the caller then takes the slow, awaiting path). Lengths are validated by the slow path.
   */
  tryString(maxBytes: number): string | undefined {
    if (this.end - this.pos < 8) return undefined;
    const lo = this.buf.readUInt32LE(this.pos);
    const hi = this.buf.readUInt32LE(this.pos + 4);
    if (hi !== 0 || lo > maxBytes || this.end - this.pos - 8 < lo) return undefined;
    const start = this.pos + 8;
    this.pos = start + lo;
    return this.buf.toString('utf8', start, start + lo);
  }
  utf8(n: number): string {
    const s = this.buf.toString('utf8', this.pos, this.pos + n);
    this.pos += n;
    return s;
  }
  skip(n: number): void {
    this.pos += n;
  }
}

/** A 64-bit integer as a number when it is safe, else as a bigint. */
function narrow(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

/** Reads GGUF v2/v3 structures (u64 counts and string lengths). */
class GgufParser {
  constructor(private readonly r: BufferedFileReader) {}

  async count(what: string): Promise<number> {
    if (this.r.buffered < 8) await this.r.ensure(8, what);
    return this.r.u64Number(what);
  }

  async string(what: string, maxBytes = MAX_STRING_BYTES): Promise<string> {
    const at = this.r.offset;
    const len = await this.count(`length of ${what}`);
    if (len > maxBytes) this.r.fail(`${what} is ${len} bytes long (limit ${maxBytes})`, at);
    if (len > this.r.remaining) {
      this.r.fail(`${what} is ${len} bytes long but only ${this.r.remaining} bytes are left`, at);
    }
    if (this.r.buffered < len) await this.r.ensure(len, what);
    return this.r.utf8(len);
  }

  async valueType(what: string): Promise<GgufValueType> {
    const at = this.r.offset;
    await this.r.ensure(4, what);
    const t = this.r.u32();
    if (!(t in MIN_ITEM_BYTES)) this.r.fail(`${what} has unknown value type ${t}`, at);
    return t as GgufValueType;
  }

  /** Reads one scalar of a fixed-size type; the caller ensured the bytes. */
  private scalar(type: GgufValueType): GgufValue {
    const r = this.r;
    switch (type) {
      case GgufValueType.UINT8:
        return r.u8();
      case GgufValueType.INT8:
        return r.i8();
      case GgufValueType.UINT16:
        return r.u16();
      case GgufValueType.INT16:
        return r.i16();
      case GgufValueType.UINT32:
        return r.u32();
      case GgufValueType.INT32:
        return r.i32();
      case GgufValueType.FLOAT32:
        return r.f32();
      case GgufValueType.BOOL:
        return r.u8() !== 0;
      case GgufValueType.UINT64:
        return narrow(r.u64());
      case GgufValueType.INT64:
        return narrow(r.i64());
      case GgufValueType.FLOAT64:
        return r.f64();
      case GgufValueType.STRING:
      case GgufValueType.ARRAY:
        throw new Error(`internal: ${GgufValueType[type]} is not a fixed-size type`);
    }
  }

  async value(type: GgufValueType, key: string): Promise<GgufValue> {
    if (type === GgufValueType.STRING) return this.string(`value of ${key}`);
    if (type === GgufValueType.ARRAY) return this.array(key);
    await this.r.ensure(MIN_ITEM_BYTES[type], `value of ${key}`);
    return this.scalar(type);
  }

  async array(key: string, itemTypeOut?: { itemType?: GgufValueType }): Promise<GgufValue[]> {
    const itemType = await this.valueType(`item type of array ${key}`);
    if (itemTypeOut) itemTypeOut.itemType = itemType;
    const at = this.r.offset;
    const n = await this.count(`length of array ${key}`);
    const minBytes = MIN_ITEM_BYTES[itemType];
    if (n > MAX_ARRAY_ITEMS) this.r.fail(`array ${key} has ${n} items (limit ${MAX_ARRAY_ITEMS})`, at);
    if (n * minBytes > this.r.remaining) {
      this.r.fail(`array ${key} claims ${n} items but only ${this.r.remaining} bytes are left`, at);
    }
    const out: GgufValue[] = new Array<GgufValue>(n);
    if (itemType === GgufValueType.STRING) {
      for (let i = 0; i < n; i++) {
        out[i] = this.r.tryString(MAX_STRING_BYTES) ?? (await this.string(`item ${i} of ${key}`));
      }
    } else if (itemType === GgufValueType.ARRAY) {
      for (let i = 0; i < n; i++) out[i] = await this.array(`${key}[${i}]`);
    } else {
      // Fixed-size items: make a chunk of them available at a time, then read synchronously.
      const perChunk = Math.max(1, Math.floor(READ_CHUNK / minBytes));
      for (let i = 0; i < n; ) {
        const m = Math.min(perChunk, n - i);
        await this.r.ensure(m * minBytes, `items of ${key}`);
        for (const stop = i + m; i < stop; i++) out[i] = this.scalar(itemType);
      }
    }
    return out;
  }
}

/**
 * Whether `path` starts with the GGUF magic. Never throws: false for missing, unreadable or shorter-than-4-byte
 * files and for directories.
 */
export async function isGgufFile(path: string): Promise<boolean> {
  let fh: FileHandle | undefined;
  try {
    fh = await open(path, 'r');
    const b = Buffer.alloc(4);
    const { bytesRead } = await fh.read(b, 0, 4, 0);
    return bytesRead === 4 && b.readUInt32LE(0) === GGUF_MAGIC;
  } catch {
    return false;
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

/**
 * Reads the header, metadata and tensor infos of a GGUF file (v2 or v3, little-endian) — never the tensor data.
 * Reads through a 1 MiB buffer, so the cost is proportional to the metadata size (a few MB for a 150k-token
 * vocabulary), not to the file size.
 *
 * Validates what llama.cpp validates: magic, version, counts and lengths that fit in the file, known value types, no
 * duplicate keys or tensor names, 1-4 dimensions, power-of-two `general.alignment`, tensor offsets aligned, rows a
 * multiple of the type's block size and tensor data inside the file (a truncated download fails here).
 *
 * @param path file to read
 * @returns the parsed header; `dataOffset` and tensor `offset`s are in bytes
 * @throws GgufFormatError when the file is not a well-formed GGUF file
 * @throws the fs error (ENOENT, EACCES, EISDIR, ...) when the file cannot be opened or read
 */
export async function readGguf(path: string): Promise<GgufFile> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    const r = new BufferedFileReader(fh, path, size);
    if (size < 4) r.fail(`file is ${size} bytes long, too short for a GGUF header`, 0);
    await r.ensure(4, 'magic');
    const magic = r.u32();
    if (magic !== GGUF_MAGIC) r.fail(`bad magic 0x${magic.toString(16).padStart(8, '0')} (expected "GGUF")`, 0);
    await r.ensure(4, 'version');
    const version = r.u32();
    if (version === 1) r.fail('GGUF version 1 is not supported (re-convert the model)', 4);
    if (version !== 2 && version !== 3) {
      const swapped = Buffer.alloc(4);
      swapped.writeUInt32BE(version);
      const v = swapped.readUInt32LE();
      if (v >= 1 && v <= 3) r.fail('big-endian GGUF files are not supported', 4);
      r.fail(`unsupported GGUF version ${version}`, 4);
    }
    const p = new GgufParser(r);

    let at = r.offset;
    const tensorCount = await p.count('tensor count');
    const kvCountAt = r.offset;
    const kvCount = await p.count('metadata count');
    // Smallest tensor info: empty name (8) + n_dims (4) + one dim (8) + type (4) + offset (8).
    if (tensorCount * 32 > r.remaining) r.fail(`tensor count ${tensorCount} cannot fit in the file`, at);
    // Smallest key/value: empty key (8) + type (4) + a 1-byte value.
    if (kvCount * 13 > r.remaining) r.fail(`metadata count ${kvCount} cannot fit in the file`, kvCountAt);

    const metadata: Record<string, GgufValue> = {};
    const types: GgufFile['types'] = {};
    for (let i = 0; i < kvCount; i++) {
      at = r.offset;
      const key = await p.string(`key of metadata entry ${i}`, 65535);
      if (Object.prototype.hasOwnProperty.call(metadata, key)) r.fail(`duplicate metadata key "${key}"`, at);
      const type = await p.valueType(`metadata "${key}"`);
      const typeInfo: { type: GgufValueType; itemType?: GgufValueType } = { type };
      const value = type === GgufValueType.ARRAY ? await p.array(key, typeInfo) : await p.value(type, key);
      // defineProperty: a key named "__proto__" must stay a plain own property.
      Object.defineProperty(metadata, key, { value, enumerable: true, writable: true, configurable: true });
      Object.defineProperty(types, key, { value: typeInfo, enumerable: true, writable: true, configurable: true });
    }

    let alignment = DEFAULT_ALIGNMENT;
    if (Object.prototype.hasOwnProperty.call(metadata, 'general.alignment')) {
      const a = metadata['general.alignment'];
      if (
        types['general.alignment'].type !== GgufValueType.UINT32 ||
        typeof a !== 'number' ||
        a === 0 ||
        (a & (a - 1)) !== 0
      ) {
        r.fail(`general.alignment must be a non-zero power-of-two u32, got ${String(a)}`);
      }
      alignment = a as number;
    }

    const tensors: GgufTensorInfo[] = [];
    const names = new Set<string>();
    for (let i = 0; i < tensorCount; i++) {
      at = r.offset;
      const name = await p.string(`name of tensor ${i}`, 65535);
      if (names.has(name)) r.fail(`duplicate tensor name "${name}"`, at);
      names.add(name);
      await r.ensure(4, `dimensions of tensor "${name}"`);
      const nDims = r.u32();
      if (nDims < 1 || nDims > MAX_DIMS) {
        r.fail(`tensor "${name}" has ${nDims} dimensions (1 to ${MAX_DIMS} allowed)`, at);
      }
      await r.ensure(nDims * 8 + 4 + 8, `info of tensor "${name}"`);
      const shape: number[] = [];
      let elements = 1;
      for (let d = 0; d < nDims; d++) {
        const ne = r.u64Number(`dimension ${d} of tensor "${name}"`);
        shape.push(ne);
        elements *= ne;
      }
      if (!Number.isSafeInteger(elements)) r.fail(`tensor "${name}" has too many elements (${shape.join(' x ')})`, at);
      const type = r.u32();
      const offset = r.u64Number(`offset of tensor "${name}"`);
      const info = GGML_TYPES.get(type);
      if (info && shape[0] % info.blockSize !== 0) {
        r.fail(
          `tensor "${name}" of type ${info.name}: row length ${shape[0]} is not a multiple of ${info.blockSize}`,
          at,
        );
      }
      if (offset % alignment !== 0) {
        r.fail(`tensor "${name}" data offset ${offset} is not a multiple of ${alignment}`, at);
      }
      tensors.push({ name, shape, type, typeName: info?.name ?? 'unknown', offset });
    }

    const dataOffset = Math.ceil(r.offset / alignment) * alignment;
    for (const t of tensors) {
      const bytes = ggmlTensorBytes(t.type, t.shape);
      if (bytes !== null && dataOffset + t.offset + bytes > size) {
        r.fail(
          `tensor "${t.name}" data (${bytes} bytes at ${dataOffset + t.offset}) ends past the end of the ` +
            `${size}-byte file (truncated?)`,
          dataOffset + t.offset,
        );
      }
    }
    return { version, metadata, types, tensors, alignment, dataOffset };
  } finally {
    await fh.close();
  }
}
