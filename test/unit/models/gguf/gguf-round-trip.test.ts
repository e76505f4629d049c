import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { GgufValueType, readGguf } from '../../../../src/models/gguf';
import { writeGguf, type GgufKv, type GgufTensorSpec } from '../../../../scripts/gguf-writer';

const dir = mkdtempSync(join(tmpdir(), 'gguf-rt-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const KVS: GgufKv[] = [
  { key: 'u8', type: GgufValueType.UINT8, value: 255 },
  { key: 'i8', type: GgufValueType.INT8, value: -128 },
  { key: 'u16', type: GgufValueType.UINT16, value: 65535 },
  { key: 'i16', type: GgufValueType.INT16, value: -32768 },
  { key: 'u32', type: GgufValueType.UINT32, value: 4294967295 },
  { key: 'i32', type: GgufValueType.INT32, value: -2147483648 },
  { key: 'f32', type: GgufValueType.FLOAT32, value: 1.5 },
  { key: 'f32.inexact', type: GgufValueType.FLOAT32, value: 1e-5 },
  { key: 'bool.t', type: GgufValueType.BOOL, value: true },
  { key: 'bool.f', type: GgufValueType.BOOL, value: false },
  { key: 'str', type: GgufValueType.STRING, value: 'héllo wörld — 你好 🦙' },
  { key: 'str.empty', type: GgufValueType.STRING, value: '' },
  { key: 'u64.small', type: GgufValueType.UINT64, value: 1_040_000_000 },
  { key: 'u64.max', type: GgufValueType.UINT64, value: 18446744073709551615n },
  { key: 'u64.safe-as-bigint', type: GgufValueType.UINT64, value: 42n },
  { key: 'i64.neg', type: GgufValueType.INT64, value: -9007199254740991 },
  { key: 'i64.min', type: GgufValueType.INT64, value: -9223372036854775808n },
  { key: 'f64', type: GgufValueType.FLOAT64, value: Math.PI },
  { key: 'arr.str', type: GgufValueType.ARRAY, itemType: GgufValueType.STRING, value: ['a', 'ß', '', '<|im_end|>'] },
  { key: 'arr.i32', type: GgufValueType.ARRAY, itemType: GgufValueType.INT32, value: [1, -2, 3] },
  { key: 'arr.f32', type: GgufValueType.ARRAY, itemType: GgufValueType.FLOAT32, value: [0, -0.25, 1e3] },
  { key: 'arr.bool', type: GgufValueType.ARRAY, itemType: GgufValueType.BOOL, value: [true, false] },
  { key: 'arr.u64', type: GgufValueType.ARRAY, itemType: GgufValueType.UINT64, value: [1, 2n ** 63n] },
  { key: 'arr.empty', type: GgufValueType.ARRAY, itemType: GgufValueType.UINT8, value: [] },
];

/** Expected values after reading back (floats through float32, 64-bit ints narrowed to numbers when safe). */
const EXPECTED: Record<string, unknown> = {
  u8: 255,
  i8: -128,
  u16: 65535,
  i16: -32768,
  u32: 4294967295,
  i32: -2147483648,
  f32: 1.5,
  'f32.inexact': Math.fround(1e-5),
  'bool.t': true,
  'bool.f': false,
  str: 'héllo wörld — 你好 🦙',
  'str.empty': '',
  'u64.small': 1_040_000_000,
  'u64.max': 18446744073709551615n,
  'u64.safe-as-bigint': 42,
  'i64.neg': -9007199254740991,
  'i64.min': -9223372036854775808n,
  f64: Math.PI,
  'arr.str': ['a', 'ß', '', '<|im_end|>'],
  'arr.i32': [1, -2, 3],
  'arr.f32': [0, -0.25, 1000],
  'arr.bool': [true, false],
  'arr.u64': [1, 2n ** 63n],
  'arr.empty': [],
};

function bytePattern(seed: number): (out: Buffer) => void {
  return (out) => {
    for (let i = 0; i < out.length; i++) out[i] = (i * 31 + seed) & 0xff;
  };
}

describe('writeGguf → readGguf round trip', () => {
  it('keeps every value type, with its on-disk type', async () => {
    const path = join(dir, 'values.gguf');
    await writeGguf(path, KVS, []);
    const g = await readGguf(path);
    assert.equal(g.version, 3);
    assert.deepEqual(Object.keys(g.metadata), Object.keys(EXPECTED));
    for (const [key, value] of Object.entries(EXPECTED)) assert.deepEqual(g.metadata[key], value, key);
    for (const kv of KVS) {
      assert.equal(g.types[kv.key].type, kv.type, kv.key);
      assert.equal(g.types[kv.key].itemType, kv.itemType, kv.key);
    }
    assert.equal(g.tensors.length, 0);
    assert.equal(g.alignment, 32);
    assert.equal(existsSync(`${path}.tmp`), false);
  });

  it('writes tensor infos and data at aligned offsets (default alignment 32)', async () => {
    const path = join(dir, 'tensors.gguf');
    const tensors: GgufTensorSpec[] = [
      { name: 'a.weight', shape: [3], type: 0, fill: bytePattern(1) }, // 12 bytes → padded to 32
      { name: 'b.weight', shape: [4, 5], type: 1, fill: bytePattern(2) }, // 40 bytes
      { name: 'c.weight', shape: [64, 2], type: 8, fill: bytePattern(3) }, // Q8_0: 2 rows × 2 blocks × 34 bytes
      { name: 'd.weight', shape: [2, 3, 4, 5], type: 0, fill: bytePattern(4) },
    ];
    await writeGguf(path, [{ key: 'general.architecture', type: GgufValueType.STRING, value: 'test' }], tensors);
    const g = await readGguf(path);
    assert.deepEqual(
      g.tensors.map((t) => [t.name, t.shape, t.type, t.typeName, t.offset]),
      [
        ['a.weight', [3], 0, 'F32', 0],
        ['b.weight', [4, 5], 1, 'F16', 32],
        ['c.weight', [64, 2], 8, 'Q8_0', 96],
        ['d.weight', [2, 3, 4, 5], 0, 'F32', 256],
      ],
    );
    assert.equal(g.dataOffset % 32, 0);
    const file = readFileSync(path);
    const sizes = [12, 40, 136, 480];
    g.tensors.forEach((t, i) => {
      const expected = Buffer.alloc(sizes[i]);
      bytePattern(i + 1)(expected);
      const start = g.dataOffset + t.offset;
      assert.deepEqual(file.subarray(start, start + sizes[i]), expected, t.name);
    });
    assert.equal(file.length, g.dataOffset + 256 + 480);
  });

  it('honours a custom alignment and records it as general.alignment', async () => {
    const path = join(dir, 'aligned.gguf');
    await writeGguf(
      path,
      [{ key: 'x', type: GgufValueType.STRING, value: 'odd-length' }],
      [
        { name: 't0', shape: [5], type: 0, fill: bytePattern(7) },
        { name: 't1', shape: [7], type: 1, fill: bytePattern(8) },
      ],
      256,
    );
    const g = await readGguf(path);
    assert.equal(g.alignment, 256);
    assert.equal(g.metadata['general.alignment'], 256);
    assert.equal(g.types['general.alignment'].type, GgufValueType.UINT32);
    assert.equal(g.dataOffset % 256, 0);
    assert.deepEqual(
      g.tensors.map((t) => t.offset),
      [0, 256],
    );
  });

  it('replaces the destination atomically and leaves no .tmp behind on failure', async () => {
    const path = join(dir, 'atomic.gguf');
    await writeGguf(path, [{ key: 'v', type: GgufValueType.UINT32, value: 1 }], []);
    const failing: GgufTensorSpec = {
      name: 'boom',
      shape: [4],
      type: 0,
      fill: () => {
        throw new Error('fill failed');
      },
    };
    await assert.rejects(
      writeGguf(path, [{ key: 'v', type: GgufValueType.UINT32, value: 2 }], [failing]),
      /fill failed/,
    );
    assert.equal(existsSync(`${path}.tmp`), false);
    assert.equal((await readGguf(path)).metadata.v, 1);
  });

  it('rejects invalid input', async () => {
    const path = join(dir, 'invalid.gguf');
    const kv = (key: string, type: GgufValueType, value: GgufKv['value'], itemType?: GgufValueType): GgufKv => ({
      key,
      type,
      value,
      itemType,
    });
    const cases: [GgufKv[], GgufTensorSpec[], RegExp][] = [
      [[kv('k', GgufValueType.UINT8, 1), kv('k', GgufValueType.UINT8, 2)], [], /duplicate metadata key "k"/],
      [[kv('k', GgufValueType.UINT8, 256)], [], /UINT8 needs an integer/],
      [[kv('k', GgufValueType.INT32, 1.5)], [], /INT32 needs an integer/],
      [[kv('k', GgufValueType.UINT64, -1)], [], /UINT64 needs a value in/],
      [[kv('k', GgufValueType.UINT64, 2 ** 60)], [], /safe integer or a bigint/],
      [[kv('k', GgufValueType.STRING, 5)], [], /STRING needs a string/],
      [[kv('k', GgufValueType.ARRAY, [1])], [], /needs an itemType/],
      [[kv('k', GgufValueType.ARRAY, [1, 'x'], GgufValueType.INT32)], [], /k\[1\]: INT32 needs/],
      [[], [{ name: 't', shape: [33], type: 2, fill: () => undefined }], /not a multiple of Q4_0's block 32/],
      [[], [{ name: 't', shape: [0], type: 0, fill: () => undefined }], /positive integers/],
      [[], [{ name: 't', shape: [1, 1, 1, 1, 1], type: 0, fill: () => undefined }], /1 to 4/],
      [[], [{ name: 't', shape: [1], type: 4, fill: () => undefined }], /unknown ggml type 4/],
    ];
    for (const [kvs, tensors, message] of cases) {
      await assert.rejects(writeGguf(path, kvs, tensors), message);
    }
    await assert.rejects(writeGguf(path, [], [], 48), /power of two/);
    assert.equal(existsSync(path), false);
  });
});
