/**
 * Writes random-weight GGUF models with real tokenizers (from vendor/llama.cpp/models/ggml-vocab-*.gguf) for tests
 * and benchmarks. No network access is needed.
 *
 * Usage: node dist/scripts/make-test-models.js [--bench] [--force] [--out DIR] [--only FILE[,FILE...]]
 *   (default)  the tiny models, into $LLAMAD_MODELS_DIR or test/fixtures/models/ (a few seconds)
 *   --bench    also bench-1b-f16.gguf (Llama-3.2-1B shape, ≈2.08 GB), bench-1b-q4_0.gguf (quantized by the native
 *              addon), bench-1b-draft-f16/-q4_0.gguf (its first 2 layers, a speculative draft) and bench-bert-f16.gguf
 *              (bge-small shape, ≈67 MB) into .cache/models/
 *   --force    regenerate even when an up-to-date file exists
 *   --out DIR  write every model into DIR
 *   --only F   make only the named files (e.g. tiny-llama-spm.gguf)
 *
 * Each model gets a sidecar `<file>.json` stamp (generator version + spec hash); a model whose stamp matches is
 * reused. Weights are N(0, 0.02) from a seeded PRNG (files are reproducible), norm weights 1, biases 0; matrices are
 * F16, vectors F32.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import {
  GGML_TYPE_F16,
  GGML_TYPE_F32,
  GgufValueType,
  float32ToFloat16Bits,
  formatParameterCount,
  readGguf,
} from '../src/models/gguf';
import { writeGguf, type GgufKv, type GgufTensorSpec } from './gguf-writer';
import { REPO_ROOT } from '../src/config';
import { loadBinding } from '../src/native/load-binding';
import { LLAMA2_CHAT_TEMPLATE, QWEN_TOOLS_JINJA_TEMPLATE } from './test-model-templates';

/** Bump when the output of a given spec changes (tensor layout, keys, RNG). */
const GENERATOR_VERSION = 1;
const WEIGHT_STD = 0.02;
/** llama_ftype MOSTLY_F16. */
const FILE_TYPE_F16 = 1;

const VOCAB_DIR = join(REPO_ROOT, 'vendor', 'llama.cpp', 'models');

interface LlamaShape {
  arch: 'llama';
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  nFf: number;
  contextLength: number;
  ropeFreqBase: number;
  rmsEps: number;
}

interface BertShape {
  arch: 'bert' | 'nomic-bert';
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nFf: number;
  contextLength: number;
  normEps: number;
  /** llama_pooling_type: 1 mean, 4 rank (a reranker: gets the classifier head cls / cls.output). */
  poolingType: number;
  /** nomic-bert only (RoPE). */
  ropeFreqBase?: number;
}

export interface ModelSpec {
  file: string;
  name: string;
  group: 'tiny' | 'bench';
  /** Vocabulary file name in vendor/llama.cpp/models. */
  vocab: string;
  shape: LlamaShape | BertShape;
  /** tokenizer.chat_template to set (overrides the vocabulary's own). */
  chatTemplate?: string;
}

const TINY_LLAMA: LlamaShape = {
  arch: 'llama',
  nEmbd: 128,
  nLayer: 2,
  nHead: 4,
  nHeadKv: 2,
  nFf: 256,
  contextLength: 2048,
  ropeFreqBase: 10000,
  rmsEps: 1e-5,
};

const TINY_BERT: BertShape = {
  arch: 'bert',
  nEmbd: 128,
  nLayer: 2,
  nHead: 4,
  nFf: 256,
  contextLength: 512,
  normEps: 1e-12,
  poolingType: 1,
};

/**
 * Llama-3.2-1B's shape over a 32k vocabulary, tied output (bench-1b); a training context of 16k tokens, so that the
 * bench's long conversations (8k tokens, section prompt-cache) are not clamped.
 */
const BENCH_1B_SHAPE = {
  arch: 'llama',
  nEmbd: 2048,
  nLayer: 16,
  nHead: 32,
  nHeadKv: 8,
  nFf: 8192,
  contextLength: 16384,
  ropeFreqBase: 500000,
  rmsEps: 1e-5,
} as const;

export const MODEL_SPECS: readonly ModelSpec[] = [
  {
    file: 'tiny-llama-spm.gguf',
    name: 'tiny-llama-spm',
    group: 'tiny',
    vocab: 'ggml-vocab-llama-spm.gguf',
    shape: TINY_LLAMA,
    chatTemplate: LLAMA2_CHAT_TEMPLATE,
  },
  { file: 'tiny-qwen2.gguf', name: 'tiny-qwen2', group: 'tiny', vocab: 'ggml-vocab-qwen2.gguf', shape: TINY_LLAMA },
  {
    // Tool calling: ChatML with Hermes-style <tool_call> tools (native mode); rendered-mode tests pair it with
    // QWEN_TOOLS_GO_TEMPLATE.
    file: 'tiny-qwen2-tools.gguf',
    name: 'tiny-qwen2-tools',
    group: 'tiny',
    vocab: 'ggml-vocab-qwen2.gguf',
    // A trained context well above the default 4,096 so growContext tests can send 10k-token prompts.
    shape: { ...TINY_LLAMA, contextLength: 32768 },
    chatTemplate: QWEN_TOOLS_JINJA_TEMPLATE,
  },
  { file: 'tiny-bert.gguf', name: 'tiny-bert', group: 'tiny', vocab: 'ggml-vocab-bert-bge.gguf', shape: TINY_BERT },
  {
    file: 'tiny-nomic-bert.gguf',
    name: 'tiny-nomic-bert',
    group: 'tiny',
    vocab: 'ggml-vocab-bert-bge.gguf',
    shape: { ...TINY_BERT, arch: 'nomic-bert', contextLength: 2048, ropeFreqBase: 1000 },
  },
  {
    // bge-reranker shape: bert with rank pooling and a one-label classifier head (n_cls_out defaults to 1).
    file: 'tiny-bert-reranker.gguf',
    name: 'tiny-bert-reranker',
    group: 'tiny',
    vocab: 'ggml-vocab-bert-bge.gguf',
    shape: { ...TINY_BERT, poolingType: 4 },
  },
  {
    file: 'bench-1b-f16.gguf',
    name: 'bench-1b',
    group: 'bench',
    vocab: 'ggml-vocab-llama-spm.gguf',
    shape: BENCH_1B_SHAPE,
    chatTemplate: LLAMA2_CHAT_TEMPLATE,
  },
  {
    // Speculative decoding's draft for bench-1b: the same name, so the same seeds, so the same embeddings, output and
    // first 2 of its 16 layers (a truncated target, as a layer-skip draft).
    file: 'bench-1b-draft-f16.gguf',
    name: 'bench-1b',
    group: 'bench',
    vocab: 'ggml-vocab-llama-spm.gguf',
    shape: { ...BENCH_1B_SHAPE, nLayer: 2 },
    chatTemplate: LLAMA2_CHAT_TEMPLATE,
  },
  {
    file: 'bench-bert-f16.gguf',
    name: 'bench-bert',
    group: 'bench',
    vocab: 'ggml-vocab-bert-bge.gguf',
    // bge-small-en-v1.5's shape (33M parameters), mean pooling.
    shape: {
      arch: 'bert',
      nEmbd: 384,
      nLayer: 12,
      nHead: 12,
      nFf: 1536,
      contextLength: 512,
      normEps: 1e-12,
      poolingType: 1,
    },
  },
];

/** Made from the F16 bench models by the addon's quantizer. */
const BENCH_QUANTIZED = [
  { file: 'bench-1b-q4_0.gguf', source: 'bench-1b-f16.gguf', type: 'Q4_0' as const },
  { file: 'bench-1b-draft-q4_0.gguf', source: 'bench-1b-draft-f16.gguf', type: 'Q4_0' as const },
];
type QuantizedSpec = (typeof BENCH_QUANTIZED)[number];

// ---------------------------------------------------------------------------------------------------------------
// Random numbers

/** 32-bit FNV-1a of a string: seeds per model and tensor. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** sfc32 (Chris Doty-Humphrey's small fast counter) seeded from one 32-bit value; returns uniform u32s. */
function sfc32(seed: number): () => number {
  let a = 0x9e3779b9;
  let b = seed | 0;
  let c = 0x243f6a88;
  let d = 1;
  const next = (): number => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return t >>> 0;
  };
  for (let i = 0; i < 15; i++) next();
  return next;
}

const U32_TO_UNIT = 1 / 4294967296;

/** Fills `out` with N(0, std) floats by Box-Muller. */
function fillNormalF32(out: Float32Array, std: number, seed: number): void {
  const rnd = sfc32(seed);
  for (let i = 0; i < out.length; i += 2) {
    const u1 = (rnd() + 1) * U32_TO_UNIT; // (0, 1]: log is finite
    const u2 = rnd() * U32_TO_UNIT;
    const r = std * Math.sqrt(-2 * Math.log(u1));
    const theta = 2 * Math.PI * u2;
    out[i] = r * Math.cos(theta);
    if (i + 1 < out.length) out[i + 1] = r * Math.sin(theta);
  }
}

/**
 * 65536 float16 bit patterns of N(0, std) Box-Muller draws. F16 weights are picked from it with 16-bit random
 * indices: a 16-bit PRNG output per element instead of a log, a sqrt and a sin/cos, about 20x faster, which is what
 * makes the 1B model (1.04 G weights) quick to write. The table has as many entries as float16 has values.
 */
let normalF16Table: Uint16Array | undefined;
function normalF16(std: number): Uint16Array {
  if (normalF16Table) return normalF16Table;
  const draws = new Float32Array(65536);
  fillNormalF32(draws, std, 0x5eed);
  normalF16Table = new Uint16Array(65536);
  for (let i = 0; i < draws.length; i++) normalF16Table[i] = float32ToFloat16Bits(draws[i]);
  return normalF16Table;
}

/** Fills an F16 tensor buffer with N(0, WEIGHT_STD) values (two table lookups per 32-bit random number). */
function fillNormalF16(out: Buffer, seed: number): void {
  const table = normalF16(WEIGHT_STD);
  const halves = new Uint16Array(out.buffer, out.byteOffset, out.length >>> 1);
  // sfc32 inlined: this loop runs a billion times for the 1B model.
  let a = 0x9e3779b9;
  let b = seed | 0;
  let c = 0x243f6a88;
  let d = 1;
  const n = halves.length;
  for (let i = -15; i < n; i += 2) {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    if (i < 0) continue; // warm-up rounds
    halves[i] = table[t & 0xffff];
    if (i + 1 < n) halves[i + 1] = table[t >>> 16];
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Model layout

type Init = 'normal' | 'ones' | 'zeros';

interface TensorPlan {
  name: string;
  shape: number[];
  init: Init;
  /** Force F32 for a matrix (e.g. bert token types, added to F32 activations). */
  f32?: boolean;
}

/**
 * The tensors of a planned model with their reproducible random contents: 2-D weights F16 N(0, WEIGHT_STD), 1-D
 * (and `f32` matrices) F32 with `init` ones/zeros/normal; each tensor seeded from the model name, the generator
 * version and its own name, so files are byte-identical across runs.
 */
function randomTensors(modelName: string, plans: TensorPlan[]): GgufTensorSpec[] {
  const modelSeed = fnv1a(`${modelName}:${GENERATOR_VERSION}`);
  return plans.map((p) => {
    const matrix = p.shape.length >= 2 && !p.f32;
    const seed = fnv1a(`${modelSeed}:${p.name}`);
    return {
      name: p.name,
      shape: p.shape,
      type: matrix ? GGML_TYPE_F16 : GGML_TYPE_F32,
      fill: (out: Buffer) => {
        if (p.init === 'zeros') return; // the buffer comes zeroed
        if (matrix) return fillNormalF16(out, seed);
        const floats = new Float32Array(out.buffer, out.byteOffset, out.length >>> 2);
        if (p.init === 'ones') floats.fill(1);
        else fillNormalF32(floats, WEIGHT_STD, seed);
      },
    };
  });
}

function llamaTensors(s: LlamaShape, nVocab: number): TensorPlan[] {
  const headDim = s.nEmbd / s.nHead;
  const nKv = s.nHeadKv * headDim;
  const out: TensorPlan[] = [
    { name: 'token_embd.weight', shape: [s.nEmbd, nVocab], init: 'normal' },
    { name: 'output_norm.weight', shape: [s.nEmbd], init: 'ones' },
  ];
  for (let i = 0; i < s.nLayer; i++) {
    const p = `blk.${i}.`;
    out.push(
      { name: `${p}attn_norm.weight`, shape: [s.nEmbd], init: 'ones' },
      { name: `${p}attn_q.weight`, shape: [s.nEmbd, s.nHead * headDim], init: 'normal' },
      { name: `${p}attn_k.weight`, shape: [s.nEmbd, nKv], init: 'normal' },
      { name: `${p}attn_v.weight`, shape: [s.nEmbd, nKv], init: 'normal' },
      { name: `${p}attn_output.weight`, shape: [s.nHead * headDim, s.nEmbd], init: 'normal' },
      { name: `${p}ffn_norm.weight`, shape: [s.nEmbd], init: 'ones' },
      { name: `${p}ffn_gate.weight`, shape: [s.nEmbd, s.nFf], init: 'normal' },
      { name: `${p}ffn_up.weight`, shape: [s.nEmbd, s.nFf], init: 'normal' },
      { name: `${p}ffn_down.weight`, shape: [s.nFf, s.nEmbd], init: 'normal' },
    );
  }
  return out; // no output.weight: tied to token_embd
}

function bertTensors(s: BertShape, nVocab: number, nTokenTypes: number): TensorPlan[] {
  const nomic = s.arch === 'nomic-bert';
  const e = s.nEmbd;
  const out: TensorPlan[] = [
    { name: 'token_embd.weight', shape: [e, nVocab], init: 'normal' },
    { name: 'token_types.weight', shape: [e, nTokenTypes], init: 'normal', f32: true },
  ];
  if (!nomic) out.push({ name: 'position_embd.weight', shape: [e, s.contextLength], init: 'normal' });
  out.push(
    { name: 'token_embd_norm.weight', shape: [e], init: 'ones' },
    { name: 'token_embd_norm.bias', shape: [e], init: 'zeros' },
  );
  for (let i = 0; i < s.nLayer; i++) {
    const p = `blk.${i}.`;
    if (nomic) {
      // Like nomic-embed-text: fused QKV, SwiGLU FFN, no linear biases.
      out.push(
        { name: `${p}attn_qkv.weight`, shape: [e, 3 * e], init: 'normal' },
        { name: `${p}attn_output.weight`, shape: [e, e], init: 'normal' },
      );
    } else {
      for (const m of ['attn_q', 'attn_k', 'attn_v', 'attn_output']) {
        out.push(
          { name: `${p}${m}.weight`, shape: [e, e], init: 'normal' },
          { name: `${p}${m}.bias`, shape: [e], init: 'zeros' },
        );
      }
    }
    out.push(
      { name: `${p}attn_output_norm.weight`, shape: [e], init: 'ones' },
      { name: `${p}attn_output_norm.bias`, shape: [e], init: 'zeros' },
    );
    if (nomic) out.push({ name: `${p}ffn_gate.weight`, shape: [e, s.nFf], init: 'normal' });
    out.push({ name: `${p}ffn_up.weight`, shape: [e, s.nFf], init: 'normal' });
    if (!nomic) out.push({ name: `${p}ffn_up.bias`, shape: [s.nFf], init: 'zeros' });
    out.push({ name: `${p}ffn_down.weight`, shape: [s.nFf, e], init: 'normal' });
    if (!nomic) out.push({ name: `${p}ffn_down.bias`, shape: [e], init: 'zeros' });
    out.push(
      { name: `${p}layer_output_norm.weight`, shape: [e], init: 'ones' },
      { name: `${p}layer_output_norm.bias`, shape: [e], init: 'zeros' },
    );
  }
  if (s.poolingType === 4) {
    // The classifier head of llama.cpp's bert loader (src/models/bert.cpp): cls (pooler dense) and cls.output.
    out.push(
      { name: 'cls.weight', shape: [e, e], init: 'normal' },
      { name: 'cls.bias', shape: [e], init: 'zeros' },
      { name: 'cls.output.weight', shape: [e, 1], init: 'normal' },
      { name: 'cls.output.bias', shape: [1], init: 'zeros' },
    );
  }
  return out;
}

function u32(key: string, value: number): GgufKv {
  return { key, type: GgufValueType.UINT32, value };
}
function f32(key: string, value: number): GgufKv {
  return { key, type: GgufValueType.FLOAT32, value };
}

function archKvs(s: LlamaShape | BertShape): GgufKv[] {
  const a = s.arch;
  const common = [
    u32(`${a}.context_length`, s.contextLength),
    u32(`${a}.embedding_length`, s.nEmbd),
    u32(`${a}.block_count`, s.nLayer),
    u32(`${a}.feed_forward_length`, s.nFf),
    u32(`${a}.attention.head_count`, s.nHead),
  ];
  if (s.arch === 'llama') {
    return [
      ...common,
      u32(`${a}.attention.head_count_kv`, s.nHeadKv),
      u32(`${a}.rope.dimension_count`, s.nEmbd / s.nHead),
      f32(`${a}.rope.freq_base`, s.ropeFreqBase),
      f32(`${a}.attention.layer_norm_rms_epsilon`, s.rmsEps),
    ];
  }
  const kvs = [
    ...common,
    f32(`${a}.attention.layer_norm_epsilon`, s.normEps),
    { key: `${a}.attention.causal`, type: GgufValueType.BOOL, value: false },
    u32(`${a}.pooling_type`, s.poolingType),
  ];
  if (s.ropeFreqBase !== undefined) kvs.push(f32(`${a}.rope.freq_base`, s.ropeFreqBase));
  return kvs;
}

function elementCount(shape: readonly number[]): number {
  return shape.reduce((x, y) => x * y, 1);
}

// ---------------------------------------------------------------------------------------------------------------
// Generation with stamps

interface Stamp {
  generator: 'make-test-models';
  version: number;
  specHash: string;
  size: number;
  parameterCount: number;
}

function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function readStamp(file: string): Stamp | undefined {
  try {
    return JSON.parse(readFileSync(`${file}.json`, 'utf8')) as Stamp;
  } catch {
    return undefined;
  }
}

function isUpToDate(file: string, specHash: string): Stamp | undefined {
  const stamp = readStamp(file);
  if (!stamp || stamp.version !== GENERATOR_VERSION || stamp.specHash !== specHash || !existsSync(file)) {
    return undefined;
  }
  return statSync(file).size === stamp.size ? stamp : undefined;
}

function writeStamp(file: string, specHash: string, parameterCount: number): void {
  const stamp: Stamp = {
    generator: 'make-test-models',
    version: GENERATOR_VERSION,
    specHash,
    size: statSync(file).size,
    parameterCount,
  };
  writeFileSync(`${file}.json`, `${JSON.stringify(stamp, null, 2)}\n`);
}

function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

function report(verb: 'made' | 'reused', file: string, params: number, seconds?: number): void {
  const timing = seconds === undefined ? '' : ` in ${seconds.toFixed(1)} s`;
  console.log(
    `${verb.padEnd(6)} ${basename(file).padEnd(22)} ${formatParameterCount(params).padStart(7)} params ` +
      `${mb(statSync(file).size).padStart(10)}${timing}  ${file}`,
  );
}

/** Writes one model (or reuses it); returns its path. */
/** Writes one model of `spec` into `dir` (reused when its stamp matches, unless `force`); returns the file's path. */
export async function makeModel(spec: ModelSpec, dir: string, force: boolean): Promise<string> {
  const file = join(dir, spec.file);
  const vocabPath = join(VOCAB_DIR, spec.vocab);
  const specHash = sha256(JSON.stringify({ spec, vocab: sha256(readFileSync(vocabPath)), std: WEIGHT_STD }));
  const current = force ? undefined : isUpToDate(file, specHash);
  if (current) {
    report('reused', file, current.parameterCount);
    return file;
  }

  const started = performance.now();
  const vocab = await readGguf(vocabPath);
  const tokenizerKvs: GgufKv[] = [];
  for (const [key, value] of Object.entries(vocab.metadata)) {
    if (!key.startsWith('tokenizer.')) continue;
    if (key === 'tokenizer.chat_template' && spec.chatTemplate !== undefined) continue;
    const { type, itemType } = vocab.types[key];
    tokenizerKvs.push({ key, type, value, itemType });
  }
  if (spec.chatTemplate !== undefined) {
    tokenizerKvs.push({ key: 'tokenizer.chat_template', type: GgufValueType.STRING, value: spec.chatTemplate });
  }
  const tokens = vocab.metadata['tokenizer.ggml.tokens'];
  if (!Array.isArray(tokens)) throw new Error(`${vocabPath} has no tokenizer.ggml.tokens array`);
  const nVocab = tokens.length;

  const s = spec.shape;
  let plans: TensorPlan[];
  if (s.arch === 'llama') {
    plans = llamaTensors(s, nVocab);
  } else {
    const nTypes = vocab.metadata['tokenizer.ggml.token_type_count'];
    if (typeof nTypes !== 'number' || nTypes <= 0) {
      throw new Error(`${vocabPath} lacks tokenizer.ggml.token_type_count, which ${s.arch} requires`);
    }
    plans = bertTensors(s, nVocab, nTypes);
  }
  const parameterCount = plans.reduce((n, p) => n + elementCount(p.shape), 0);

  const kvs: GgufKv[] = [
    { key: 'general.architecture', type: GgufValueType.STRING, value: s.arch },
    { key: 'general.name', type: GgufValueType.STRING, value: spec.name },
    u32('general.file_type', FILE_TYPE_F16),
    { key: 'general.parameter_count', type: GgufValueType.UINT64, value: parameterCount },
    ...archKvs(s),
    ...(s.arch === 'llama' ? [u32('llama.vocab_size', nVocab)] : []),
    ...tokenizerKvs,
  ];

  const tensors = randomTensors(spec.name, plans);

  await writeGguf(file, kvs, tensors);
  writeStamp(file, specHash, parameterCount);
  report('made', file, parameterCount, (performance.now() - started) / 1000);
  return file;
}

// ---------------------------------------------------------------------------------------------------------------
// Vision projector (mmproj) for tiny-llama-spm: a llava-style CLIP encoder + MLP projector (clip.projector_type "mlp")

/** Shape of a random llava-1.5-style projector (vendor/llama.cpp/tools/mtmd/clip.cpp, models/llava.cpp). */
interface ProjectorShape {
  /** Square input side in pixels, multiple of patchSize; images are resized (padded) to it. */
  imageSize: number;
  patchSize: number;
  /** Vision transformer width, heads, FFN width, blocks (llava uses all but the last block). */
  nEmbd: number;
  nHead: number;
  nFf: number;
  nLayer: number;
  /** Hidden width of the MLP projector (mm.0 → GELU → mm.2). */
  nProjHidden: number;
  /** Output width: the text model's n_embd (mtmd rejects a mismatch). */
  nEmbdText: number;
}

export const TINY_MMPROJ = {
  file: 'tiny-mmproj.gguf',
  name: 'tiny-mmproj',
  /** (32 / 16)^2 = 4 image tokens per image, 128 wide: matches tiny-llama-spm (and tiny-qwen2). */
  shape: {
    imageSize: 32,
    patchSize: 16,
    nEmbd: 32,
    nHead: 2,
    nFf: 64,
    nLayer: 2,
    nProjHidden: 64,
    nEmbdText: TINY_LLAMA.nEmbd,
  } satisfies ProjectorShape,
};

function projectorTensors(s: ProjectorShape): TensorPlan[] {
  const e = s.nEmbd;
  const nPatches = (s.imageSize / s.patchSize) ** 2;
  // ggml shapes (ne0 first): conv kernel [patch, patch, 3 channels, n_embd]; linear weights [in, out].
  const out: TensorPlan[] = [
    { name: 'v.patch_embd.weight', shape: [s.patchSize, s.patchSize, 3, e], init: 'normal' },
    { name: 'v.position_embd.weight', shape: [e, nPatches], init: 'normal', f32: true },
    { name: 'v.pre_ln.weight', shape: [e], init: 'ones' },
    { name: 'v.pre_ln.bias', shape: [e], init: 'zeros' },
  ];
  for (let i = 0; i < s.nLayer; i++) {
    const b = `v.blk.${i}`;
    for (const t of ['attn_q', 'attn_k', 'attn_v', 'attn_out']) {
      out.push({ name: `${b}.${t}.weight`, shape: [e, e], init: 'normal' });
      out.push({ name: `${b}.${t}.bias`, shape: [e], init: 'zeros' });
    }
    for (const t of ['ln1', 'ln2']) {
      out.push({ name: `${b}.${t}.weight`, shape: [e], init: 'ones' });
      out.push({ name: `${b}.${t}.bias`, shape: [e], init: 'zeros' });
    }
    out.push(
      { name: `${b}.ffn_up.weight`, shape: [e, s.nFf], init: 'normal' },
      { name: `${b}.ffn_up.bias`, shape: [s.nFf], init: 'zeros' },
      { name: `${b}.ffn_down.weight`, shape: [s.nFf, e], init: 'normal' },
      { name: `${b}.ffn_down.bias`, shape: [e], init: 'zeros' },
    );
  }
  out.push(
    { name: 'mm.0.weight', shape: [e, s.nProjHidden], init: 'normal' },
    { name: 'mm.0.bias', shape: [s.nProjHidden], init: 'zeros' },
    { name: 'mm.2.weight', shape: [s.nProjHidden, s.nEmbdText], init: 'normal' },
    { name: 'mm.2.bias', shape: [s.nEmbdText], init: 'zeros' },
  );
  return out;
}

/**
 * Writes tiny-mmproj.gguf: the GGUF keys clip.cpp requires for a vision "mlp" projector (general.architecture "clip",
 * clip.has_vision_encoder, clip.vision.* hyper-parameters, image_mean/std) and N(0, WEIGHT_STD) F16 matrices.
 */
async function makeProjector(dir: string, force: boolean): Promise<string> {
  const spec = TINY_MMPROJ;
  const file = join(dir, spec.file);
  const specHash = sha256(JSON.stringify({ spec, std: WEIGHT_STD, version: GENERATOR_VERSION }));
  const current = force ? undefined : isUpToDate(file, specHash);
  if (current) {
    report('reused', file, current.parameterCount);
    return file;
  }
  const started = performance.now();
  const s = spec.shape;
  const plans = projectorTensors(s);
  const parameterCount = plans.reduce((n, p) => n + elementCount(p.shape), 0);
  const f32Array = (key: string, value: number[]): GgufKv => ({
    key,
    type: GgufValueType.ARRAY,
    itemType: GgufValueType.FLOAT32,
    value,
  });
  const kvs: GgufKv[] = [
    { key: 'general.architecture', type: GgufValueType.STRING, value: 'clip' },
    { key: 'general.name', type: GgufValueType.STRING, value: spec.name },
    u32('general.file_type', FILE_TYPE_F16),
    { key: 'clip.projector_type', type: GgufValueType.STRING, value: 'mlp' },
    { key: 'clip.has_vision_encoder', type: GgufValueType.BOOL, value: true },
    { key: 'clip.use_gelu', type: GgufValueType.BOOL, value: true },
    u32('clip.vision.image_size', s.imageSize),
    u32('clip.vision.patch_size', s.patchSize),
    u32('clip.vision.embedding_length', s.nEmbd),
    u32('clip.vision.feed_forward_length', s.nFf),
    u32('clip.vision.block_count', s.nLayer),
    u32('clip.vision.attention.head_count', s.nHead),
    f32('clip.vision.attention.layer_norm_epsilon', 1e-5),
    u32('clip.vision.projection_dim', s.nEmbdText),
    f32Array('clip.vision.image_mean', [0.48145466, 0.4578275, 0.40821073]),
    f32Array('clip.vision.image_std', [0.26862954, 0.26130258, 0.27577711]),
  ];
  const tensors = randomTensors(spec.name, plans);
  await writeGguf(file, kvs, tensors);
  writeStamp(file, specHash, parameterCount);
  report('made', file, parameterCount, (performance.now() - started) / 1000);
  return file;
}

// ---------------------------------------------------------------------------------------------------------------
// LoRA adapter for tiny-llama-spm (vendor/llama.cpp/src/llama-adapter.cpp)

/**
 * tiny-llama-spm-lora.gguf: rank-4 LoRA over every attention and FFN-up matrix of tiny-llama-spm. Each adapted
 * weight W (ggml shape [n_in, n_out]) gets `<name>.lora_a` shaped [n_in, rank] and `<name>.lora_b` shaped
 * [rank, n_out] (ne0 first: llama.cpp checks W.ne0 == A.ne0, W.ne1 == B.ne1, A.ne1 == B.ne0), F32, N(0, LORA_STD),
 * with alpha = rank (effective scale 1). The values are much larger than the base weights' 0.02 so that the delta
 * B·A dominates and greedy output differs from the base model's.
 */
export const TINY_LLAMA_SPM_LORA = {
  file: 'tiny-llama-spm-lora.gguf',
  name: 'tiny-llama-spm-lora',
  base: TINY_LLAMA,
  rank: 4,
  std: 0.5,
  targets: ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_up'],
};

/** Writes tiny-llama-spm-lora.gguf (general.type "adapter", adapter.type "lora", adapter.lora.alpha) or reuses it. */
async function makeLora(dir: string, force: boolean): Promise<string> {
  const spec = TINY_LLAMA_SPM_LORA;
  const file = join(dir, spec.file);
  const specHash = sha256(JSON.stringify({ spec, version: GENERATOR_VERSION }));
  const current = force ? undefined : isUpToDate(file, specHash);
  if (current) {
    report('reused', file, current.parameterCount);
    return file;
  }
  const started = performance.now();
  const shapes = new Map(llamaTensors(spec.base, 1).map((p) => [p.name, p.shape]));
  const plans: { name: string; shape: number[] }[] = [];
  for (let i = 0; i < spec.base.nLayer; i++) {
    for (const t of spec.targets) {
      const name = `blk.${i}.${t}.weight`;
      const w = shapes.get(name);
      if (!w) throw new Error(`tiny-llama-spm has no tensor ${name}`);
      plans.push({ name: `${name}.lora_a`, shape: [w[0], spec.rank] });
      plans.push({ name: `${name}.lora_b`, shape: [spec.rank, w[1]] });
    }
  }
  const parameterCount = plans.reduce((n, p) => n + elementCount(p.shape), 0);
  const kvs: GgufKv[] = [
    { key: 'general.architecture', type: GgufValueType.STRING, value: 'llama' },
    { key: 'general.type', type: GgufValueType.STRING, value: 'adapter' },
    { key: 'general.name', type: GgufValueType.STRING, value: spec.name },
    { key: 'adapter.type', type: GgufValueType.STRING, value: 'lora' },
    f32('adapter.lora.alpha', spec.rank),
  ];
  const modelSeed = fnv1a(`${spec.name}:${GENERATOR_VERSION}`);
  const tensors: GgufTensorSpec[] = plans.map((p) => ({
    name: p.name,
    shape: p.shape,
    type: GGML_TYPE_F32,
    fill: (out: Buffer) =>
      fillNormalF32(
        new Float32Array(out.buffer, out.byteOffset, out.length >>> 2),
        spec.std,
        fnv1a(`${modelSeed}:${p.name}`),
      ),
  }));
  await writeGguf(file, kvs, tensors);
  writeStamp(file, specHash, parameterCount);
  report('made', file, parameterCount, (performance.now() - started) / 1000);
  return file;
}

/** Quantizes a bench F16 model with the native addon (e.g. bench-1b-q4_0.gguf). */
async function makeQuantized(spec: QuantizedSpec, dir: string, force: boolean): Promise<void> {
  const source = join(dir, spec.source);
  const file = join(dir, spec.file);
  const sourceStamp = readStamp(source);
  if (!sourceStamp || !existsSync(source)) throw new Error(`cannot make ${spec.file}: ${source} is missing`);
  const specHash = sha256(JSON.stringify({ source: sourceStamp.specHash, type: spec.type }));
  const current = force ? undefined : isUpToDate(file, specHash);
  if (current) {
    report('reused', file, current.parameterCount);
    return;
  }
  let quantize: ((input: string, output: string, params: { type: 'Q4_0' }) => Promise<void>) | undefined;
  try {
    const binding = loadBinding();
    if (typeof binding.quantize === 'function') quantize = binding.quantize.bind(binding);
  } catch (err) {
    throw new Error(`cannot make ${spec.file}: ${(err as Error).message}`);
  }
  if (!quantize) {
    throw new Error(
      `cannot make ${spec.file}: the native addon has no quantize() yet ` +
        '(rebuild it with `npm run build:native` once it does)',
    );
  }
  const started = performance.now();
  const tmp = `${file}.tmp`;
  try {
    await quantize(source, tmp, { type: spec.type });
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  writeStamp(file, specHash, sourceStamp.parameterCount);
  report('made', file, sourceStamp.parameterCount, (performance.now() - started) / 1000);
}

interface Options {
  bench: boolean;
  force: boolean;
  out?: string;
  only?: Set<string>;
}

const USAGE = 'usage: make-test-models [--bench] [--force] [--out DIR] [--only FILE[,FILE...]]';

function parseArgs(argv: string[]): Options {
  const opts: Options = { bench: false, force: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--bench') opts.bench = true;
    else if (a === '--force') opts.force = true;
    else if (a === '--out' && i + 1 < argv.length) opts.out = resolve(argv[++i]);
    else if (a === '--only' && i + 1 < argv.length) opts.only = new Set(argv[++i].split(','));
    else if (a === '--help' || a === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else {
      throw new Error(`unknown argument ${a} (${USAGE})`);
    }
  }
  return opts;
}

/** Default directory of the tiny models: $LLAMAD_MODELS_DIR or test/fixtures/models. */
export function tinyModelsDir(): string {
  const env = process.env.LLAMAD_MODELS_DIR;
  return env ? resolve(env) : join(REPO_ROOT, 'test', 'fixtures', 'models');
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const dirs = {
    tiny: opts.out ?? tinyModelsDir(),
    bench: opts.out ?? join(REPO_ROOT, '.cache', 'models'),
  };
  const wanted = (file: string, group: ModelSpec['group']): boolean =>
    opts.only ? opts.only.has(file) : group === 'tiny' || opts.bench;
  if (opts.only) {
    const known = new Set([
      ...MODEL_SPECS.map((s) => s.file),
      TINY_MMPROJ.file,
      TINY_LLAMA_SPM_LORA.file,
      ...BENCH_QUANTIZED.map((q) => q.file),
    ]);
    const unknown = [...opts.only].filter((f) => !known.has(f));
    if (unknown.length > 0) throw new Error(`unknown model ${unknown.join(', ')} (known: ${[...known].join(', ')})`);
  }
  for (const spec of MODEL_SPECS) {
    if (!wanted(spec.file, spec.group)) continue;
    mkdirSync(dirs[spec.group], { recursive: true });
    await makeModel(spec, dirs[spec.group], opts.force);
  }
  if (wanted(TINY_MMPROJ.file, 'tiny')) {
    mkdirSync(dirs.tiny, { recursive: true });
    await makeProjector(dirs.tiny, opts.force);
  }
  if (wanted(TINY_LLAMA_SPM_LORA.file, 'tiny')) {
    mkdirSync(dirs.tiny, { recursive: true });
    await makeLora(dirs.tiny, opts.force);
  }
  for (const q of BENCH_QUANTIZED) {
    if (wanted(q.file, 'bench')) await makeQuantized(q, dirs.bench, opts.force);
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(`make-test-models: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
