/**
 * The files made beside tiny-llama-spm (scripts/make-test-models.ts): its vision projector (tiny-mmproj.gguf) and two
 * LoRA adapters (tiny-llama-spm-lora.gguf, tiny-llama-spm-lora2.gguf); and the LoRA adapters of bench-1b
 * (bench-1b-lora-<i>.gguf, the bench's `lora` section).
 */
import { join } from 'node:path';
import { GGML_TYPE_F32, GgufValueType } from '../src/models/gguf';
import { writeGguf, type GgufKv, type GgufTensorSpec } from './gguf-writer';
import { isUpToDate, report, sha256, writeStamp } from './test-model-files';
import {
  BENCH_1B_SHAPE,
  FILE_TYPE_F16,
  GENERATOR_VERSION,
  TINY_LLAMA,
  WEIGHT_STD,
  type LlamaShape,
} from './test-model-specs';
import {
  elementCount,
  f32,
  fillNormalF32,
  fnv1a,
  llamaTensors,
  randomTensors,
  u32,
  type TensorPlan,
} from './test-model-tensors';

// ---------------------------------------------------------------------------------------------------------------
// Vision projector (mmproj) for tiny-llama-spm: a llava-style CLIP encoder + MLP projector (clip.projector_type "mlp")

/** Shape of a random llava-1.5-style projector (vendor/llama.cpp/tools/mtmd/clip.cpp, models/llava.cpp). */
export interface ProjectorShape {
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

/** tiny-mmproj.gguf: the vision projector of tiny-llama-spm. */
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

/** The encoder's shape keys clip.cpp reads per modality (clip.<modality>.*: width, FFN, blocks, heads, eps, output). */
export function encoderKvs(
  modality: 'vision' | 'audio',
  s: { nEmbd: number; nFf: number; nLayer: number; nHead: number; nEmbdText: number },
): GgufKv[] {
  return [
    u32(`clip.${modality}.embedding_length`, s.nEmbd),
    u32(`clip.${modality}.feed_forward_length`, s.nFf),
    u32(`clip.${modality}.block_count`, s.nLayer),
    u32(`clip.${modality}.attention.head_count`, s.nHead),
    f32(`clip.${modality}.attention.layer_norm_epsilon`, 1e-5),
    u32(`clip.${modality}.projection_dim`, s.nEmbdText),
  ];
}

/**
 * The layer norms (ln1, ln2: weight 1, bias 0) and GELU FFN (ffn_up, ffn_down with biases) of one pre-norm encoder
 * block `b` (e.g. `v.blk.0`, `a.blk.0`) as clip.cpp's build_vit reads them; width `e`, FFN width `nFf`.
 */
export function encoderNormsAndFfn(b: string, e: number, nFf: number): TensorPlan[] {
  const out: TensorPlan[] = [];
  for (const t of ['ln1', 'ln2']) {
    out.push({ name: `${b}.${t}.weight`, shape: [e], init: 'ones' });
    out.push({ name: `${b}.${t}.bias`, shape: [e], init: 'zeros' });
  }
  out.push(
    { name: `${b}.ffn_up.weight`, shape: [e, nFf], init: 'normal' },
    { name: `${b}.ffn_up.bias`, shape: [nFf], init: 'zeros' },
    { name: `${b}.ffn_down.weight`, shape: [nFf, e], init: 'normal' },
    { name: `${b}.ffn_down.bias`, shape: [e], init: 'zeros' },
  );
  return out;
}

/** The tensors (v.* and mm.0 / mm.2) of a llava-style vision projector of shape `s` (ggml names and shapes). */
export function projectorTensors(s: ProjectorShape): TensorPlan[] {
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
    out.push(...encoderNormsAndFfn(b, e, s.nFf));
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
 * The vision-encoder keys clip.cpp reads for a llava-style projector of shape `s`: clip.has_vision_encoder, the
 * clip.vision.* hyper-parameters and image_mean/std (no projector type: single-modality files give it as
 * clip.projector_type, mixed ones as clip.vision.projector_type).
 */
export function visionKvs(s: ProjectorShape): GgufKv[] {
  const f32Array = (key: string, value: number[]): GgufKv => ({
    key,
    type: GgufValueType.ARRAY,
    itemType: GgufValueType.FLOAT32,
    value,
  });
  return [
    { key: 'clip.has_vision_encoder', type: GgufValueType.BOOL, value: true },
    { key: 'clip.use_gelu', type: GgufValueType.BOOL, value: true },
    u32('clip.vision.image_size', s.imageSize),
    u32('clip.vision.patch_size', s.patchSize),
    ...encoderKvs('vision', s),
    f32Array('clip.vision.image_mean', [0.48145466, 0.4578275, 0.40821073]),
    f32Array('clip.vision.image_std', [0.26862954, 0.26130258, 0.27577711]),
  ];
}

/**
 * Writes tiny-mmproj.gguf: the GGUF keys clip.cpp requires for a vision "mlp" projector (general.architecture "clip",
 * clip.has_vision_encoder, clip.vision.* hyper-parameters, image_mean/std) and N(0, WEIGHT_STD) F16 matrices.
 */
export async function makeProjector(dir: string, force: boolean): Promise<string> {
  const spec = TINY_MMPROJ;
  const kvs: GgufKv[] = [
    { key: 'general.architecture', type: GgufValueType.STRING, value: 'clip' },
    { key: 'general.name', type: GgufValueType.STRING, value: spec.name },
    u32('general.file_type', FILE_TYPE_F16),
    { key: 'clip.projector_type', type: GgufValueType.STRING, value: 'mlp' },
    ...visionKvs(spec.shape),
  ];
  return writeProjector(dir, force, spec, kvs, projectorTensors(spec.shape));
}

/**
 * Writes projector `spec.file` in `dir` from its GGUF keys and tensor plans (N(0, WEIGHT_STD) values seeded by
 * `spec.name`), or reuses it when its stamp (a hash of `spec`, the std and GENERATOR_VERSION) matches.
 * @returns the file's path.
 */
export async function writeProjector(
  dir: string,
  force: boolean,
  spec: { file: string; name: string },
  kvs: GgufKv[],
  plans: TensorPlan[],
): Promise<string> {
  const file = join(dir, spec.file);
  const specHash = sha256(JSON.stringify({ spec, std: WEIGHT_STD, version: GENERATOR_VERSION }));
  const current = force ? undefined : isUpToDate(file, specHash);
  if (current) {
    report('reused', file, current.parameterCount);
    return file;
  }
  const started = performance.now();
  const parameterCount = plans.reduce((n, p) => n + elementCount(p.shape), 0);
  await writeGguf(file, kvs, randomTensors(spec.name, plans));
  writeStamp(file, specHash, parameterCount);
  report('made', file, parameterCount, (performance.now() - started) / 1000);
  return file;
}

// ---------------------------------------------------------------------------------------------------------------
// LoRA adapters for tiny-llama-spm (vendor/llama.cpp/src/llama-adapter.cpp)

/** One LoRA adapter: which matrices it adapts, its rank and the std of its random A and B values. */
export interface LoraSpec {
  file: string;
  /** general.name; also seeds the values. */
  name: string;
  base: LlamaShape;
  rank: number;
  std: number;
  /** Tensor name stems adapted in every block (`attn_q` → `blk.<i>.attn_q.weight`). */
  targets: string[];
}

/**
 * tiny-llama-spm-lora.gguf: rank-4 LoRA over every attention and FFN-up matrix of tiny-llama-spm. Each adapted
 * weight W (ggml shape [n_in, n_out]) gets `<name>.lora_a` shaped [n_in, rank] and `<name>.lora_b` shaped
 * [rank, n_out] (ne0 first: llama.cpp checks W.ne0 == A.ne0, W.ne1 == B.ne1, A.ne1 == B.ne0), F32, N(0, LORA_STD),
 * with alpha = rank (effective scale 1). The values are much larger than the base weights' 0.02 so that the delta
 * B·A dominates and greedy output differs from the base model's.
 */
export const TINY_LLAMA_SPM_LORA: LoraSpec = {
  file: 'tiny-llama-spm-lora.gguf',
  name: 'tiny-llama-spm-lora',
  base: TINY_LLAMA,
  rank: 4,
  std: 0.5,
  targets: ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_up'],
};

/**
 * tiny-llama-spm-lora2.gguf: a second adapter of tiny-llama-spm, made like the first but with its own values (the
 * seed comes from the name) and rank 8 over the attention and FFN-down matrices, so that its greedy output differs
 * from the first adapter's and from the base model's (per-request adapter tests: two adapters of one base).
 */
export const TINY_LLAMA_SPM_LORA2: LoraSpec = {
  file: 'tiny-llama-spm-lora2.gguf',
  name: 'tiny-llama-spm-lora2',
  base: TINY_LLAMA,
  rank: 8,
  std: 0.5,
  targets: ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_down'],
};

/** The LoRA adapters made for tiny-llama-spm. */
export const TINY_LLAMA_SPM_LORAS: LoraSpec[] = [TINY_LLAMA_SPM_LORA, TINY_LLAMA_SPM_LORA2];

/**
 * Four rank-16 adapters of bench-1b (the bench's `lora` section): attention and MLP matrices, N(0, 0.02) each, so
 * each is a realistic size (about 45 MB in F32) and gives its own output.
 */
export const BENCH_1B_LORAS: LoraSpec[] = [0, 1, 2, 3].map((i) => ({
  file: `bench-1b-lora-${i}.gguf`,
  name: `bench-1b-lora-${i}`,
  base: BENCH_1B_SHAPE,
  rank: 16,
  std: 0.02,
  targets: ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down'],
}));

/**
 * Writes a LoRA adapter (general.type "adapter", adapter.type "lora", adapter.lora.alpha = rank) or
 * reuses it when its stamp matches.
 * @param spec which adapter (default the first, tiny-llama-spm-lora.gguf).
 */
export async function makeLora(dir: string, force: boolean, spec: LoraSpec = TINY_LLAMA_SPM_LORA): Promise<string> {
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
      if (!w) throw new Error(`the base of ${spec.name} has no tensor ${name}`);
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
