import { open, type FileHandle } from 'node:fs/promises';
import { BufferedFileReader, READ_CHUNK } from './gguf-buffered-reader';
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
/**
 * Items of an array decoded between two yields to the event loop (setImmediate) when a whole array is decoded: a
 * 150k-token vocabulary is ~150 ms of string decoding, so it is cut into slices of a few milliseconds.
 */
const ITEMS_PER_SLICE = 8192;

/** Lets the event loop run (timers, I/O) between two slices of a long decode. */
const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * `maxArrayItems` for callers that need the scalars only (facts, estimates, create, non-verbose show): arrays of up
 * to this many items are decoded, longer ones (vocabularies, merges, token types) are skipped.
 */
export const FACTS_MAX_ARRAY_ITEMS = 64;

/** What {@link readGguf} decodes. */
export interface ReadGgufOptions {
  /**
   * Arrays with more items than this are validated (every item's length and type) and skipped, not decoded: their
   * value is a sparse array of the right `length` with no items. Callers that only need scalars and counts (model
   * facts, memory estimates, create, non-verbose show) pass a small number, so a tokenizer vocabulary of ~10^5
   * strings costs a walk over its lengths (~1 ms), not ~150 ms of string decoding on the event loop.
   * Default: every array is decoded (in slices of {@link ITEMS_PER_SLICE} items, yielding to the event loop between
   * them).
   */
  maxArrayItems?: number;
}

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

/** A 64-bit integer as a number when it is safe, else as a bigint. */
function narrow(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

/** Reads GGUF v2/v3 structures (u64 counts and string lengths). */
class GgufParser {
  constructor(
    private readonly r: BufferedFileReader,
    private readonly maxArrayItems: number = Infinity,
  ) {}

  async count(what: string): Promise<number> {
    if (this.r.buffered < 8) await this.r.ensure(8, what);
    return this.r.u64Number(what);
  }

  async string(what: string, maxBytes = MAX_STRING_BYTES): Promise<string> {
    const len = await this.stringLength(what, maxBytes);
    if (this.r.buffered < len) await this.r.ensure(len, what);
    return this.r.utf8(len);
  }

  /** Reads and validates a string's u64 length; the position is then at its first byte. */
  private async stringLength(what: string, maxBytes: number): Promise<number> {
    const at = this.r.offset;
    const len = await this.count(`length of ${what}`);
    if (len > maxBytes) this.r.fail(`${what} is ${len} bytes long (limit ${maxBytes})`, at);
    if (len > this.r.remaining) {
      this.r.fail(`${what} is ${len} bytes long but only ${this.r.remaining} bytes are left`, at);
    }
    return len;
  }

  /** Validates and skips one string (the same checks as {@link string}, without decoding it). */
  private async skipString(what: string): Promise<void> {
    const len = await this.stringLength(what, MAX_STRING_BYTES);
    this.r.skipBytes(len, what);
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
    if (n > this.maxArrayItems) {
      await this.skipItems(key, itemType, n);
      return new Array<GgufValue>(n);
    }
    const out: GgufValue[] = new Array<GgufValue>(n);
    if (itemType === GgufValueType.STRING) {
      for (let i = 0; i < n; i++) {
        if (i % ITEMS_PER_SLICE === ITEMS_PER_SLICE - 1) await yieldToLoop();
        out[i] = this.r.tryString(MAX_STRING_BYTES) ?? (await this.string(`item ${i} of ${key}`));
      }
    } else if (itemType === GgufValueType.ARRAY) {
      for (let i = 0; i < n; i++) out[i] = await this.array(`${key}[${i}]`);
    } else {
      // Fixed-size items: make a chunk of them available at a time, then read synchronously.
      const perChunk = Math.max(1, Math.floor(Math.min(READ_CHUNK / minBytes, ITEMS_PER_SLICE)));
      for (let i = 0; i < n; ) {
        if (i > 0) await yieldToLoop();
        const m = Math.min(perChunk, n - i);
        await this.r.ensure(m * minBytes, `items of ${key}`);
        for (const stop = i + m; i < stop; i++) out[i] = this.scalar(itemType);
      }
    }
    return out;
  }

  /**
   * Moves past the `n` items of an array without decoding them, with the checks decoding does: string lengths
   * within the limits and the file, nested arrays' item types and counts, fixed-size items inside the file.
   */
  private async skipItems(key: string, itemType: GgufValueType, n: number): Promise<void> {
    if (itemType === GgufValueType.STRING) {
      for (let i = 0; i < n; i++) {
        if (i % (ITEMS_PER_SLICE * 4) === ITEMS_PER_SLICE * 4 - 1) await yieldToLoop();
        if (!this.r.trySkipString(MAX_STRING_BYTES)) await this.skipString(`item ${i} of ${key}`);
      }
    } else if (itemType === GgufValueType.ARRAY) {
      for (let i = 0; i < n; i++) await this.array(`${key}[${i}]`);
    } else {
      this.r.skipBytes(n * MIN_ITEM_BYTES[itemType], `items of ${key}`);
    }
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
 * Long work is kept off the event loop's critical path: with `options.maxArrayItems` big arrays are skipped, else
 * they are decoded in slices that yield to the event loop.
 *
 * @param path file to read
 * @param options what to decode ({@link ReadGgufOptions}); default everything
 * @returns the parsed header; `dataOffset` and tensor `offset`s are in bytes
 * @throws GgufFormatError when the file is not a well-formed GGUF file
 * @throws the fs error (ENOENT, EACCES, EISDIR, ...) when the file cannot be opened or read
 */
export async function readGguf(path: string, options: ReadGgufOptions = {}): Promise<GgufFile> {
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
    const p = new GgufParser(r, options.maxArrayItems);

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
