import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { float16BitsToFloat32, float32ArrayToFloat16, float32ToFloat16Bits } from '../../../../src/models/gguf';

describe('float32ToFloat16Bits', () => {
  it('converts known values', () => {
    const table: [number, number][] = [
      [0, 0x0000],
      [-0, 0x8000],
      [1, 0x3c00],
      [-2, 0xc000],
      [0.5, 0x3800],
      [0.1, 0x2e66],
      [0.02, 0x251f],
      [65504, 0x7bff], // largest finite half
      [65519, 0x7bff], // rounds down
      [65520, 0x7c00], // rounds up to Infinity
      [1e6, 0x7c00],
      [-1e6, 0xfc00],
      [Infinity, 0x7c00],
      [-Infinity, 0xfc00],
      [2 ** -14, 0x0400], // smallest normal
      [2 ** -24, 0x0001], // smallest subnormal
      [2 ** -25, 0x0000], // tie between 0 and the smallest subnormal → even (0)
      [3 * 2 ** -25, 0x0002], // tie between 1 and 2 subnormal units → even (2)
      [2 ** -26, 0x0000],
      [1 + 2 ** -11, 0x3c00], // tie → even mantissa
      [1 + 3 * 2 ** -11, 0x3c02], // tie → even mantissa (up)
    ];
    for (const [value, bits] of table) {
      assert.equal(float32ToFloat16Bits(value), bits, `${value} → 0x${bits.toString(16)}`);
    }
    assert.equal(float32ToFloat16Bits(Number.NaN) & 0x7e00, 0x7e00);
  });

  it('round-trips every finite half exactly', () => {
    for (let bits = 0; bits < 0x10000; bits++) {
      if ((bits & 0x7c00) === 0x7c00) continue; // Inf / NaN
      const value = float16BitsToFloat32(bits);
      assert.equal(float32ToFloat16Bits(value), bits, `0x${bits.toString(16)}`);
    }
  });

  it('converts arrays', () => {
    const src = new Float32Array([1, -2, 0.5]);
    const dst = new Uint16Array(3);
    float32ArrayToFloat16(src, dst);
    assert.deepEqual([...dst], [0x3c00, 0xc000, 0x3800]);
    assert.throws(() => float32ArrayToFloat16(src, new Uint16Array(2)), RangeError);
  });
});
