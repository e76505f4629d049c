import type { FileHandle } from 'node:fs/promises';
import { GgufFormatError } from './gguf-format.error';

/** Bytes read from the file at a time (the buffer grows when one item needs more). */
export const READ_CHUNK = 1 << 20;

/**
 * Positioned, buffered reads over a file handle. Primitive reads are synchronous and assume the bytes were made
 * available with `ensure(n)` first, so hot loops only await when the buffer actually runs dry.
 */
export class BufferedFileReader {
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
  /** Moves `n` bytes forward, reading nothing when they are not buffered; throws when the file ends first. */
  skipBytes(n: number, what: string): void {
    if (this.end - this.pos >= n) {
      this.pos += n;
      return;
    }
    if (n > this.remaining) this.fail(`file truncated: ${what} needs ${n} bytes, only ${this.remaining} left`);
    this.base = this.offset + n;
    this.pos = 0;
    this.end = 0;
  }
  /**
   * Skips a u64-length-prefixed string when its length is buffered and valid (at most `maxBytes`, inside the file),
   * returning true; else consumes nothing and returns false (the caller takes the validating slow path).
   */
  trySkipString(maxBytes: number): boolean {
    if (this.end - this.pos < 8) return false;
    const lo = this.buf.readUInt32LE(this.pos);
    const hi = this.buf.readUInt32LE(this.pos + 4);
    if (hi !== 0 || lo > maxBytes || this.end - this.pos - 8 < lo) return false;
    this.pos += 8 + lo;
    return true;
  }
}
