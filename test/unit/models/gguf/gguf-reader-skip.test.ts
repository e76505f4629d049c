import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FACTS_MAX_ARRAY_ITEMS, GgufFormatError, GgufValueType, readGguf } from '../../../../src/models/gguf';
import { ensureTestModels, TINY_LLAMA_SPM, TINY_QWEN2 } from '../../../utils/models';

const dir = mkdtempSync(join(tmpdir(), 'gguf-skip-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A GGUF v3 file with no tensors and one array metadata entry `arr` of `items` (already encoded). */
function arrayFile(name: string, itemType: GgufValueType, count: number, items: Buffer): string {
  const u32 = (v: number) => Buffer.from(new Uint32Array([v]).buffer);
  const u64 = (v: number) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    return b;
  };
  const str = (s: string) => Buffer.concat([u64(Buffer.byteLength(s)), Buffer.from(s)]);
  const path = join(dir, name);
  const header = [Buffer.from('GGUF'), u32(3), u64(0), u64(1), str('arr'), u32(GgufValueType.ARRAY)];
  writeFileSync(path, Buffer.concat([...header, u32(itemType), u64(count), items]));
  return path;
}

/** `count` strings `s0`, `s1`, … encoded as GGUF strings. */
function strings(count: number): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const s = Buffer.from(`s${i}`);
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(s.length));
    parts.push(len, s);
  }
  return Buffer.concat(parts);
}

describe('readGguf with maxArrayItems (vocabularies skipped on the request path)', () => {
  it('gives the same scalars as a full read, and skipped arrays of the right length with no items', async () => {
    ensureTestModels();
    for (const path of [TINY_QWEN2, TINY_LLAMA_SPM]) {
      const full = await readGguf(path);
      const facts = await readGguf(path, { maxArrayItems: FACTS_MAX_ARRAY_ITEMS });
      assert.deepEqual(Object.keys(facts.metadata), Object.keys(full.metadata));
      assert.deepEqual(facts.types, full.types);
      assert.deepEqual(facts.tensors, full.tensors);
      assert.equal(facts.dataOffset, full.dataOffset);
      let skipped = 0;
      for (const [key, value] of Object.entries(full.metadata)) {
        const got = facts.metadata[key];
        if (Array.isArray(value) && value.length > FACTS_MAX_ARRAY_ITEMS) {
          skipped++;
          assert.ok(Array.isArray(got), key);
          assert.equal(got.length, value.length, key);
          assert.equal(Object.keys(got).length, 0, `${key}: no item decoded`);
        } else {
          assert.deepEqual(got, value, key);
        }
      }
      assert.ok(skipped >= 2, `${path}: the vocabulary arrays were skipped`); // tokens, token types (scores/merges)
    }
  });

  it('validates what it skips: a string or a fixed-size run that ends past the file is a GgufFormatError', async () => {
    const good = arrayFile('good.gguf', GgufValueType.STRING, 100, strings(100));
    assert.equal(((await readGguf(good, { maxArrayItems: 1 })).metadata.arr as unknown[]).length, 100);
    const cut = strings(100);
    const short = arrayFile('short.gguf', GgufValueType.STRING, 100, cut.subarray(0, cut.length - 1));
    await assert.rejects(readGguf(short, { maxArrayItems: 1 }), GgufFormatError);
    const absurd = Buffer.concat([strings(3), Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0])]);
    await assert.rejects(
      readGguf(arrayFile('absurd.gguf', GgufValueType.STRING, 4, absurd), { maxArrayItems: 1 }),
      /item 3 of arr is 4294967295 bytes long/,
    );
    const floats = arrayFile('floats.gguf', GgufValueType.FLOAT32, 1000, Buffer.alloc(4 * 999));
    await assert.rejects(readGguf(floats, { maxArrayItems: 1 }), /array arr claims 1000 items/);
    const fine = arrayFile('fine.gguf', GgufValueType.FLOAT32, 1000, Buffer.alloc(4000));
    assert.equal(((await readGguf(fine, { maxArrayItems: 1 })).metadata.arr as unknown[]).length, 1000);
  });

  it('a full read decodes a 150k-token vocabulary in slices, letting the event loop run between them', async () => {
    ensureTestModels();
    // Counts event-loop turns (a setImmediate chain) while the read runs: a read that decoded the whole vocabulary in
    // one go would see only the few turns of its file reads.
    let turns = 0;
    let running = true;
    const spin = () => {
      turns++;
      if (running) setImmediate(spin);
    };
    setImmediate(spin);
    const full = await readGguf(TINY_QWEN2);
    running = false;
    const tokens = full.metadata['tokenizer.ggml.tokens'] as string[];
    assert.ok(tokens.length > 100_000, `qwen2 vocabulary: ${tokens.length} tokens`);
    assert.equal(typeof tokens[tokens.length - 1], 'string');
    // tokens, token types and merges: at least one turn per 8192 items of each.
    assert.ok(turns >= Math.floor(tokens.length / 8192) * 2, `${turns} event-loop turns during the read`);
  });
});
