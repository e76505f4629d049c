/** IEEE 754 half-precision conversions (the layout of ggml's F16). */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/**
 * Converts a number to the bits of the nearest float16 (round to nearest, ties to even, as a float32 is first).
 * Values beyond ±65504 round to ±Infinity; NaN gives a quiet NaN (0x7e00 with the sign).
 * @returns a 16-bit pattern in [0, 0xffff]
 */
export function float32ToFloat16Bits(value: number): number {
  f32[0] = value;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) return sign | (mant !== 0 ? 0x7e00 : 0x7c00);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): shift the implicit-1 mantissa right, rounding to nearest even.
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    let h = m >>> shift;
    const rest = m & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rest > half || (rest === half && (h & 1) !== 0)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  // A carry out of the mantissa correctly bumps the exponent (up to 0x7c00 = Infinity).
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1) !== 0)) h++;
  return sign | h;
}

/**
 * Converts float16 bits back to a number (exact).
 * @param bits a 16-bit pattern
 */
export function float16BitsToFloat32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/**
 * Converts `src` element-wise into `dst` (float16 bits). Both must have the same length.
 * @throws RangeError when the lengths differ
 */
export function float32ArrayToFloat16(src: Float32Array, dst: Uint16Array): void {
  if (src.length !== dst.length) {
    throw new RangeError(`length mismatch: ${src.length} floats into ${dst.length} halves`);
  }
  for (let i = 0; i < src.length; i++) dst[i] = float32ToFloat16Bits(src[i]);
}
