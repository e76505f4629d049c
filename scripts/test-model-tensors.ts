/**
 * The tensors and GGUF keys of a generated model (scripts/make-test-models.ts): seeded random numbers (files are
 * byte-identical across runs), the tensor layout of each architecture and its hyper-parameter keys.
 */
import { GGML_TYPE_F16, GGML_TYPE_F32, GgufValueType, float32ToFloat16Bits } from '../src/models/gguf';
import type { GgufKv, GgufTensorSpec } from './gguf-writer';
import { GENERATOR_VERSION, WEIGHT_STD, type BertShape, type LlamaShape } from './test-model-specs';

// ---------------------------------------------------------------------------------------------------------------
// Random numbers

/** 32-bit FNV-1a of a string: seeds per model and tensor. */
export function fnv1a(s: string): number {
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
export function fillNormalF32(out: Float32Array, std: number, seed: number): void {
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
export function fillNormalF16(out: Buffer, seed: number): void {
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

/** One tensor of a planned model: name, ggml shape (ne0 first), initial values. */
export interface TensorPlan {
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
export function randomTensors(modelName: string, plans: TensorPlan[]): GgufTensorSpec[] {
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

/**
 * The tensors of a llama model of shape `s` with `nVocab` tokens (ggml names and shapes). Blocks from index
 * `silentFrom` on get zero attention-output and FFN-down weights: they add nothing to the residual stream.
 */
export function llamaTensors(s: LlamaShape, nVocab: number, silentFrom = s.nLayer): TensorPlan[] {
  const headDim = s.nEmbd / s.nHead;
  const nKv = s.nHeadKv * headDim;
  const out: TensorPlan[] = [
    { name: 'token_embd.weight', shape: [s.nEmbd, nVocab], init: 'normal' },
    { name: 'output_norm.weight', shape: [s.nEmbd], init: 'ones' },
  ];
  for (let i = 0; i < s.nLayer; i++) {
    const p = `blk.${i}.`;
    const writes: Init = i < silentFrom ? 'normal' : 'zeros';
    out.push(
      { name: `${p}attn_norm.weight`, shape: [s.nEmbd], init: 'ones' },
      { name: `${p}attn_q.weight`, shape: [s.nEmbd, s.nHead * headDim], init: 'normal' },
      { name: `${p}attn_k.weight`, shape: [s.nEmbd, nKv], init: 'normal' },
      { name: `${p}attn_v.weight`, shape: [s.nEmbd, nKv], init: 'normal' },
      { name: `${p}attn_output.weight`, shape: [s.nHead * headDim, s.nEmbd], init: writes },
      { name: `${p}ffn_norm.weight`, shape: [s.nEmbd], init: 'ones' },
      { name: `${p}ffn_gate.weight`, shape: [s.nEmbd, s.nFf], init: 'normal' },
      { name: `${p}ffn_up.weight`, shape: [s.nEmbd, s.nFf], init: 'normal' },
      { name: `${p}ffn_down.weight`, shape: [s.nFf, s.nEmbd], init: writes },
    );
  }
  return out; // no output.weight: tied to token_embd
}

/** The tensors of a bert model of shape `s` with `nVocab` tokens and `nTokenTypes` token types. */
export function bertTensors(s: BertShape, nVocab: number, nTokenTypes: number): TensorPlan[] {
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

/** A UINT32 GGUF key. */
export function u32(key: string, value: number): GgufKv {
  return { key, type: GgufValueType.UINT32, value };
}
/** A FLOAT32 GGUF key. */
export function f32(key: string, value: number): GgufKv {
  return { key, type: GgufValueType.FLOAT32, value };
}

/** The `<arch>.*` hyper-parameter keys llama.cpp reads for shape `s`. */
export function archKvs(s: LlamaShape | BertShape): GgufKv[] {
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

/** The number of elements of a tensor shape. */
export function elementCount(shape: readonly number[]): number {
  return shape.reduce((x, y) => x * y, 1);
}
