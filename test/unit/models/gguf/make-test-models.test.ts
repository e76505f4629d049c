import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, openSync, readFileSync, readSync, closeSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  float16BitsToFloat32,
  formatParameterCount,
  GgufValueType,
  modelDetails,
  readGguf,
  type GgufFile,
} from '../../../../src/models/gguf';
import { REPO_ROOT } from '../../../../src/config';
import { ensureTestModels, TINY_BERT, TINY_LLAMA_SPM, TINY_NOMIC_BERT, TINY_QWEN2 } from '../../../utils/models';

const VOCABS = join(REPO_ROOT, 'vendor', 'llama.cpp', 'models');
const GENERATOR = join(REPO_ROOT, 'dist', 'scripts', 'make-test-models.js');

function elements(shape: number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

function assertTokenizerCopied(model: GgufFile, vocab: GgufFile, except: string[] = []): void {
  const keys = Object.keys(vocab.metadata).filter((k) => k.startsWith('tokenizer.') && !except.includes(k));
  assert.ok(keys.length >= 5);
  for (const key of keys) {
    assert.deepEqual(model.types[key], vocab.types[key], `type of ${key}`);
    assert.deepEqual(model.metadata[key], vocab.metadata[key], `value of ${key}`);
  }
}

/** Reads a tensor's F16 data as numbers. */
function readF16(path: string, file: GgufFile, name: string): number[] {
  const t = file.tensors.find((x) => x.name === name);
  assert.ok(t, name);
  const n = elements(t.shape);
  const buf = Buffer.alloc(n * 2);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, buf, 0, buf.length, file.dataOffset + t.offset);
  } finally {
    closeSync(fd);
  }
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(float16BitsToFloat32(buf.readUInt16LE(i * 2)));
  return out;
}

describe('generated tiny models', () => {
  before(() => ensureTestModels());

  it('tiny-llama-spm: llama arch, real SPM tokenizer, llama-2 template, F16 matrices, tied output', async () => {
    const g = await readGguf(TINY_LLAMA_SPM);
    const vocab = await readGguf(join(VOCABS, 'ggml-vocab-llama-spm.gguf'));
    assertTokenizerCopied(g, vocab);
    const d = modelDetails(g);
    assert.equal(d.architecture, 'llama');
    assert.equal(d.fileType, 'F16');
    assert.equal(d.contextLength, 2048);
    assert.equal(d.embeddingLength, 128);
    assert.match(d.chatTemplate ?? '', /\[INST\]/);
    assert.equal(d.parameterCount, 4_391_552);
    assert.equal(
      d.parameterCount,
      g.tensors.reduce((n, t) => n + elements(t.shape), 0),
    );
    assert.equal(formatParameterCount(d.parameterCount), '4.39M');
    assert.equal(g.metadata['llama.attention.head_count'], 4);
    assert.equal(g.metadata['llama.attention.head_count_kv'], 2);
    assert.equal(g.metadata['llama.rope.dimension_count'], 32);
    assert.equal(g.metadata['llama.block_count'], 2);
    assert.equal(g.metadata['llama.feed_forward_length'], 256);
    assert.equal(g.metadata['llama.vocab_size'], 32000);
    assert.equal(g.types['general.parameter_count'].type, GgufValueType.UINT64);
    assert.equal(g.tensors.length, 2 + 2 * 9);
    assert.equal(
      g.tensors.find((t) => t.name === 'output.weight'),
      undefined,
    );
    for (const t of g.tensors) assert.equal(t.typeName, t.shape.length === 2 ? 'F16' : 'F32', t.name);
    assert.deepEqual(g.tensors.find((t) => t.name === 'blk.1.attn_k.weight')?.shape, [128, 64]);

    const w = readF16(TINY_LLAMA_SPM, g, 'blk.0.ffn_up.weight');
    const mean = w.reduce((a, b) => a + b, 0) / w.length;
    const std = Math.sqrt(w.reduce((a, b) => a + (b - mean) ** 2, 0) / w.length);
    assert.ok(Math.abs(mean) < 0.001, `mean ${mean}`);
    assert.ok(Math.abs(std - 0.02) < 0.001, `std ${std}`);
    assert.ok(new Set(w).size > 1000, 'weights are varied');
  });

  it("tiny-qwen2: the qwen2 BPE tokenizer with the vocabulary's own ChatML template", async () => {
    const g = await readGguf(TINY_QWEN2);
    const vocab = await readGguf(join(VOCABS, 'ggml-vocab-qwen2.gguf'));
    assertTokenizerCopied(g, vocab);
    assert.match(g.metadata['tokenizer.chat_template'] as string, /<\|im_start\|>/);
    assert.deepEqual(g.tensors.find((t) => t.name === 'token_embd.weight')?.shape, [128, 151936]);
    assert.equal(modelDetails(g).architecture, 'llama');
  });

  it('tiny-bert and tiny-nomic-bert: embedding models with token types and mean pooling', async () => {
    const vocab = await readGguf(join(VOCABS, 'ggml-vocab-bert-bge.gguf'));
    const bert = await readGguf(TINY_BERT);
    assertTokenizerCopied(bert, vocab);
    assert.deepEqual(modelDetails(bert), {
      architecture: 'bert',
      parameterCount: bert.tensors.reduce((n, t) => n + elements(t.shape), 0),
      fileType: 'F16',
      contextLength: 512,
      embeddingLength: 128,
      poolingType: 1,
    });
    assert.equal(bert.metadata['bert.attention.causal'], false);
    assert.equal(bert.metadata['tokenizer.ggml.token_type_count'], 2);
    assert.deepEqual(bert.tensors.find((t) => t.name === 'position_embd.weight')?.shape, [128, 512]);

    const nomic = await readGguf(TINY_NOMIC_BERT);
    assertTokenizerCopied(nomic, vocab);
    const d = modelDetails(nomic);
    assert.equal(d.architecture, 'nomic-bert');
    assert.equal(d.contextLength, 2048);
    assert.equal(d.poolingType, 1);
    assert.equal(
      nomic.tensors.find((t) => t.name === 'position_embd.weight'),
      undefined,
    );
    assert.deepEqual(nomic.tensors.find((t) => t.name === 'blk.0.attn_qkv.weight')?.shape, [128, 384]);
    assert.ok(nomic.tensors.some((t) => t.name === 'blk.1.ffn_gate.weight'));
  });
});

describe('make-test-models stamps', () => {
  const dir = mkdtempSync(join(tmpdir(), 'make-models-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const run = (...args: string[]): string => {
    const r = spawnSync(process.execPath, [GENERATOR, '--out', dir, '--only', 'tiny-llama-spm.gguf', ...args], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout;
  };
  const sha = (p: string): string => createHash('sha256').update(readFileSync(p)).digest('hex');

  it('makes, reuses, and regenerates on a stale stamp, reproducibly', () => {
    const path = join(dir, 'tiny-llama-spm.gguf');
    assert.match(run(), /^made\s+tiny-llama-spm\.gguf/m);
    const first = sha(path);
    assert.equal(first, sha(TINY_LLAMA_SPM), 'same spec, same bytes as the fixture');
    assert.match(run(), /^reused\s+tiny-llama-spm\.gguf/m);

    const stampPath = `${path}.json`;
    const stamp = JSON.parse(readFileSync(stampPath, 'utf8')) as { version: number };
    writeFileSync(stampPath, JSON.stringify({ ...stamp, version: -1 }));
    assert.match(run(), /^made\s+tiny-llama-spm\.gguf/m);
    assert.equal(sha(path), first);
    assert.match(run('--force'), /^made/m);
  });

  it('fails clearly on unknown arguments and models', () => {
    const r = spawnSync(process.execPath, [GENERATOR, '--only', 'nope.gguf', '--out', dir], { encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /unknown model nope\.gguf/);
    const r2 = spawnSync(process.execPath, [GENERATOR, '--bogus'], { encoding: 'utf8' });
    assert.notEqual(r2.status, 0);
    assert.match(r2.stderr, /unknown argument --bogus/);
  });
});
