import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { GgufFormatError, GgufValueType, isGgufFile, readGguf } from '../../../../src/models/gguf';
import { writeGguf } from '../../../../scripts/gguf-writer';

const dir = mkdtempSync(join(tmpdir(), 'gguf-bad-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Little-endian byte builder for hand-made (broken) files. */
class Bytes {
  private parts: Buffer[] = [];
  u32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.parts.push(b);
    return this;
  }
  u64(v: bigint | number): this {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.parts.push(b);
    return this;
  }
  str(s: string): this {
    const b = Buffer.from(s, 'utf8');
    return this.u64(b.length).raw(b);
  }
  raw(b: Buffer): this {
    this.parts.push(b);
    return this;
  }
  header(tensors: bigint | number, kvs: bigint | number, version = 3): this {
    return this.raw(Buffer.from('GGUF')).u32(version).u64(tensors).u64(kvs);
  }
  build(): Buffer {
    return Buffer.concat(this.parts);
  }
}

let n = 0;
function file(content: Buffer): string {
  const p = join(dir, `f${n++}.gguf`);
  writeFileSync(p, content);
  return p;
}

async function rejectsFormat(content: Buffer, message: RegExp): Promise<void> {
  const before = process.memoryUsage().arrayBuffers;
  await assert.rejects(readGguf(file(content)), (err: unknown) => {
    assert.ok(err instanceof GgufFormatError, `expected GgufFormatError, got ${String(err)}`);
    assert.equal(err.name, 'GgufFormatError');
    assert.match(err.message, message);
    assert.match(err.message, /^invalid GGUF file /);
    return true;
  });
  // No allocation proportional to the absurd sizes claimed by the file.
  assert.ok(process.memoryUsage().arrayBuffers - before < 64 * 1024 * 1024, 'allocated too much');
}

describe('readGguf on malformed files', () => {
  it('rejects a bad magic, an empty file and a short file', async () => {
    await rejectsFormat(Buffer.from('GGML\x03\x00\x00\x00'), /bad magic/);
    await rejectsFormat(Buffer.alloc(0), /too short/);
    await rejectsFormat(Buffer.from('GG'), /too short/);
    await rejectsFormat(Buffer.from('GGUF'), /truncated/);
  });

  it('rejects unsupported versions and big-endian files', async () => {
    await rejectsFormat(new Bytes().header(0, 0, 1).build(), /version 1 is not supported/);
    await rejectsFormat(new Bytes().header(0, 0, 4).build(), /unsupported GGUF version 4/);
    const bigEndian = Buffer.concat([Buffer.from('GGUF'), Buffer.from([0, 0, 0, 3]), Buffer.alloc(16)]);
    await rejectsFormat(bigEndian, /big-endian/);
  });

  it('rejects a header truncated at every byte', async () => {
    const good = new Bytes()
      .header(1, 2)
      .str('general.architecture')
      .u32(GgufValueType.STRING)
      .str('llama')
      .str('tokens')
      .u32(GgufValueType.ARRAY)
      .u32(GgufValueType.STRING)
      .u64(2)
      .str('a')
      .str('bc')
      .str('t')
      .u32(1)
      .u64(8)
      .u32(0)
      .u64(0)
      .build();
    const withData = Buffer.concat([good, Buffer.alloc(64)]);
    const g = await readGguf(file(withData));
    assert.deepEqual(g.metadata.tokens, ['a', 'bc']);
    for (let cut = 0; cut < good.length; cut++) {
      await assert.rejects(readGguf(file(good.subarray(0, cut))), GgufFormatError, `cut at ${cut}`);
    }
  });

  it('rejects absurd counts and lengths without allocating them', async () => {
    await rejectsFormat(new Bytes().header(2n ** 62n, 0).build(), /tensor count .* absurdly large/);
    await rejectsFormat(new Bytes().header(1_000_000_000, 0).build(), /tensor count 1000000000 cannot fit/);
    await rejectsFormat(new Bytes().header(0, 2n ** 40n).build(), /metadata count .* cannot fit/);
    await rejectsFormat(
      new Bytes()
        .header(0, 1)
        .u64(2n ** 40n)
        .raw(Buffer.alloc(16))
        .build(),
      /key of metadata entry 0 is .* bytes long/,
    );
    await rejectsFormat(
      new Bytes().header(0, 1).str('k').u32(GgufValueType.STRING).u64(1_000_000).raw(Buffer.alloc(8)).build(),
      /value of k is 1000000 bytes long but only 8 bytes are left/,
    );
    await rejectsFormat(
      new Bytes().header(0, 1).str('k').u32(GgufValueType.ARRAY).u32(GgufValueType.UINT32).u64(1e9).build(),
      /array k has 1000000000 items/,
    );
    await rejectsFormat(
      new Bytes().header(0, 1).str('k').u32(GgufValueType.ARRAY).u32(GgufValueType.UINT32).u64(1000).u64(0).build(),
      /array k claims 1000 items but only 8 bytes are left/,
    );
  });

  it('rejects unknown value types, duplicate keys and bad alignment', async () => {
    await rejectsFormat(new Bytes().header(0, 1).str('k').u32(13).u64(0).build(), /unknown value type 13/);
    await rejectsFormat(
      new Bytes().header(0, 1).str('k').u32(GgufValueType.ARRAY).u32(99).u64(0).build(),
      /unknown value type 99/,
    );
    await rejectsFormat(
      new Bytes()
        .header(0, 2)
        .str('k')
        .u32(GgufValueType.UINT32)
        .u32(1)
        .str('k')
        .u32(GgufValueType.UINT32)
        .u32(2)
        .build(),
      /duplicate metadata key "k"/,
    );
    await rejectsFormat(
      new Bytes().header(0, 1).str('general.alignment').u32(GgufValueType.UINT32).u32(48).build(),
      /general.alignment must be a non-zero power-of-two/,
    );
  });

  it('rejects bad tensor infos and tensor data past the end of the file', async () => {
    const tensor = (name: string, dims: number[], type: number, offset: number): Bytes => {
      const b = new Bytes().str(name).u32(dims.length);
      for (const d of dims) b.u64(d);
      return b.u32(type).u64(offset);
    };
    const oneTensor = (t: Bytes, pad = 1024): Buffer =>
      Buffer.concat([new Bytes().header(1, 0).build(), t.build(), Buffer.alloc(pad)]);
    await rejectsFormat(oneTensor(tensor('t', [1, 1, 1, 1, 1], 0, 0)), /5 dimensions/);
    await rejectsFormat(oneTensor(tensor('t', [], 0, 0)), /0 dimensions/);
    await rejectsFormat(oneTensor(tensor('t', [2 ** 40, 2 ** 40], 0, 0)), /too many elements/);
    await rejectsFormat(oneTensor(tensor('t', [33], 2, 0)), /row length 33 is not a multiple of 32/);
    await rejectsFormat(oneTensor(tensor('t', [8], 0, 4)), /offset 4 is not a multiple of 32/);
    await rejectsFormat(oneTensor(tensor('t', [1024], 0, 0)), /ends past the end of the .* file \(truncated\?\)/);
    const twice = Buffer.concat([
      new Bytes().header(2, 0).build(),
      tensor('t', [8], 0, 0).build(),
      tensor('t', [8], 0, 32).build(),
      Buffer.alloc(128),
    ]);
    await rejectsFormat(twice, /duplicate tensor name "t"/);
  });

  it('detects a truncated copy of a valid file', async () => {
    const path = join(dir, 'whole.gguf');
    await writeGguf(
      path,
      [{ key: 'general.architecture', type: GgufValueType.STRING, value: 'x' }],
      [{ name: 'w', shape: [256, 16], type: 1, fill: (b) => b.fill(1) }],
    );
    const whole = await readGguf(path);
    assert.equal(whole.tensors.length, 1);
    const bytes = readFileSync(path);
    await rejectsFormat(bytes.subarray(0, bytes.length - 1), /truncated/);
  });

  it('passes fs errors through (missing file)', async () => {
    await assert.rejects(readGguf(join(dir, 'missing.gguf')), { code: 'ENOENT' });
  });
});

describe('isGgufFile', () => {
  it('checks the magic and never throws', async () => {
    assert.equal(await isGgufFile(file(new Bytes().header(0, 0).build())), true);
    assert.equal(await isGgufFile(file(Buffer.from('GGUF'))), true);
    assert.equal(await isGgufFile(file(Buffer.from('GGU'))), false);
    assert.equal(await isGgufFile(file(Buffer.from('GGML....'))), false);
    assert.equal(await isGgufFile(file(Buffer.alloc(0))), false);
    assert.equal(await isGgufFile(join(dir, 'missing.gguf')), false);
    const sub = join(dir, 'a-directory');
    mkdirSync(sub);
    assert.equal(await isGgufFile(sub), false);
  });
});
