/**
 * The audio projectors made beside tiny-llama-spm (scripts/make-test-models.ts): tiny-audio-mmproj.gguf, an
 * audio-only Qwen2-Audio ("qwen2a") projector, and tiny-omni-mmproj.gguf, one file with both the vision projector of
 * tiny-mmproj.gguf and that audio projector (as Qwen2.5-Omni's mmproj carries both encoders).
 *
 * Facts from the vendored tree (vendor/llama.cpp/tools/mtmd): clip.cpp load_hparams reads clip.audio.* (and
 * clip.audio.num_mel_bins, 1..256) when clip.has_audio_encoder is true, and in a file with both encoders the
 * per-modality clip.vision.projector_type / clip.audio.projector_type (only when clip.projector_type is absent);
 * load_tensors takes the audio encoder's tensors under the prefix "a" and, for qwen2a, a.conv1d.{1,2}.* and
 * mm.a.fc.*; models/whisper-enc.cpp builds conv1d (k=3) → GELU → conv1d (k=3, stride 2) → GELU → learned positions
 * (at least n_frames / 2 rows) → pre-norm blocks (ln1/ln2 with bias, q and v bias, no k bias) → 2× average pool →
 * post_ln → mm.a.fc.  The whisper preprocessor appends 30 s of silence and cuts 3000-frame (30 s) chunks (16 kHz, hop 160):
 * one chunk gives 1500 positions and 750 embeddings. mtmd.cpp requires the projector output width to equal the text
 * model's n_embd (and, with both encoders, the two widths to agree).
 */
import { GgufValueType } from '../src/models/gguf';
import { type GgufKv } from './gguf-writer';
import {
  TINY_MMPROJ,
  encoderKvs,
  encoderNormsAndFfn,
  projectorTensors,
  visionKvs,
  writeProjector,
} from './test-model-extras';
import { BENCH_1B_SHAPE, FILE_TYPE_F16, TINY_LLAMA } from './test-model-specs';
import { u32, type TensorPlan } from './test-model-tensors';

/** Shape of a random Whisper-encoder + linear ("qwen2a") audio projector. */
export interface AudioProjectorShape {
  /** Mel bins of the input spectrogram (Whisper uses 80 or 128; clip.cpp accepts 1..256). */
  nMel: number;
  /** Encoder width, heads, FFN width, blocks. */
  nEmbd: number;
  nHead: number;
  nFf: number;
  nLayer: number;
  /** Rows of the learned position table: Whisper's 1500 (one 30 s chunk after the stride-2 conv). */
  nPositions: number;
  /** Output width of mm.a.fc: the text model's n_embd (mtmd rejects a mismatch). */
  nEmbdText: number;
}

/** tiny-audio-mmproj.gguf: the audio projector of tiny-llama-spm (750 audio embeddings per 30 s chunk). */
export const TINY_AUDIO_MMPROJ = {
  file: 'tiny-audio-mmproj.gguf',
  name: 'tiny-audio-mmproj',
  shape: {
    nMel: 80,
    nEmbd: 32,
    nHead: 2,
    nFf: 64,
    nLayer: 2,
    nPositions: 1500,
    nEmbdText: TINY_LLAMA.nEmbd,
  } satisfies AudioProjectorShape,
};

/**
 * bench-audio-mmproj.gguf: an audio projector of bench-1b (output 2048 wide) with a Whisper-base-sized encoder (512
 * wide, 8 heads, 6 blocks, 80 mel bins; about 22 M parameters, 44 MB in F16), for the bench's `audio` section.
 */
export const BENCH_AUDIO_MMPROJ = {
  file: 'bench-audio-mmproj.gguf',
  name: 'bench-audio-mmproj',
  shape: {
    nMel: 80,
    nEmbd: 512,
    nHead: 8,
    nFf: 2048,
    nLayer: 6,
    nPositions: 1500,
    nEmbdText: BENCH_1B_SHAPE.nEmbd,
  } satisfies AudioProjectorShape,
};

/** tiny-omni-mmproj.gguf: tiny-mmproj's vision projector and tiny-audio-mmproj's audio projector in one file. */
export const TINY_OMNI_MMPROJ = {
  file: 'tiny-omni-mmproj.gguf',
  name: 'tiny-omni-mmproj',
  vision: TINY_MMPROJ.shape,
  audio: TINY_AUDIO_MMPROJ.shape,
};

/** The a.* and mm.a.fc.* tensors of a qwen2a audio projector of shape `s` (ggml names and shapes, ne0 first). */
export function audioProjectorTensors(s: AudioProjectorShape): TensorPlan[] {
  const e = s.nEmbd;
  // conv kernels [kernel, in channels, out channels]; conv biases [1, channels] (broadcast over frames), F32
  const out: TensorPlan[] = [
    { name: 'a.conv1d.1.weight', shape: [3, s.nMel, e], init: 'normal' },
    { name: 'a.conv1d.1.bias', shape: [1, e], init: 'zeros', f32: true },
    { name: 'a.conv1d.2.weight', shape: [3, e, e], init: 'normal' },
    { name: 'a.conv1d.2.bias', shape: [1, e], init: 'zeros', f32: true },
    { name: 'a.position_embd.weight', shape: [e, s.nPositions], init: 'normal', f32: true },
  ];
  for (let i = 0; i < s.nLayer; i++) {
    const b = `a.blk.${i}`;
    out.push(
      { name: `${b}.attn_q.weight`, shape: [e, e], init: 'normal' },
      { name: `${b}.attn_q.bias`, shape: [e], init: 'zeros' },
      { name: `${b}.attn_k.weight`, shape: [e, e], init: 'normal' }, // Whisper's key projection has no bias
      { name: `${b}.attn_v.weight`, shape: [e, e], init: 'normal' },
      { name: `${b}.attn_v.bias`, shape: [e], init: 'zeros' },
      { name: `${b}.attn_out.weight`, shape: [e, e], init: 'normal' },
      { name: `${b}.attn_out.bias`, shape: [e], init: 'zeros' },
    );
    out.push(...encoderNormsAndFfn(b, e, s.nFf));
  }
  out.push(
    { name: 'a.post_ln.weight', shape: [e], init: 'ones' },
    { name: 'a.post_ln.bias', shape: [e], init: 'zeros' },
    { name: 'mm.a.fc.weight', shape: [e, s.nEmbdText], init: 'normal' },
    { name: 'mm.a.fc.bias', shape: [s.nEmbdText], init: 'zeros' },
  );
  return out;
}

/** The audio-encoder keys clip.cpp reads for shape `s` (clip.has_audio_encoder and clip.audio.*). */
export function audioKvs(s: AudioProjectorShape): GgufKv[] {
  return [
    { key: 'clip.has_audio_encoder', type: GgufValueType.BOOL, value: true },
    u32('clip.audio.num_mel_bins', s.nMel),
    ...encoderKvs('audio', s),
  ];
}

/** The general.* keys of a projector file named `name`. */
function generalKvs(name: string): GgufKv[] {
  return [
    { key: 'general.architecture', type: GgufValueType.STRING, value: 'clip' },
    { key: 'general.name', type: GgufValueType.STRING, value: name },
    u32('general.file_type', FILE_TYPE_F16),
  ];
}

/**
 * Writes an audio-only projector (clip.projector_type "qwen2a", N(0, WEIGHT_STD) F16 matrices): tiny-audio-mmproj.gguf
 * or `spec` (e.g. BENCH_AUDIO_MMPROJ), or reuses it when its stamp matches.
 * @returns the file's path
 */
export async function makeAudioProjector(
  dir: string,
  force: boolean,
  spec: typeof TINY_AUDIO_MMPROJ = TINY_AUDIO_MMPROJ,
): Promise<string> {
  const kvs: GgufKv[] = [
    ...generalKvs(spec.name),
    { key: 'clip.projector_type', type: GgufValueType.STRING, value: 'qwen2a' },
    ...audioKvs(spec.shape),
  ];
  return writeProjector(dir, force, spec, kvs, audioProjectorTensors(spec.shape));
}

/**
 * Writes tiny-omni-mmproj.gguf: both encoders (clip.has_vision_encoder and clip.has_audio_encoder), no top-level
 * clip.projector_type but clip.vision.projector_type "mlp" and clip.audio.projector_type "qwen2a", the v.* / mm.0 /
 * mm.2 tensors of tiny-mmproj's shape and the a.* / mm.a.fc tensors of tiny-audio-mmproj's shape (own random values:
 * the seed comes from the file's name). Reused when its stamp matches.
 * @returns the file's path
 */
export async function makeOmniProjector(dir: string, force: boolean): Promise<string> {
  const spec = TINY_OMNI_MMPROJ;
  const kvs: GgufKv[] = [
    ...generalKvs(spec.name),
    { key: 'clip.vision.projector_type', type: GgufValueType.STRING, value: 'mlp' },
    { key: 'clip.audio.projector_type', type: GgufValueType.STRING, value: 'qwen2a' },
    ...visionKvs(spec.vision),
    ...audioKvs(spec.audio),
  ];
  const plans = [...projectorTensors(spec.vision), ...audioProjectorTensors(spec.audio)];
  return writeProjector(dir, force, spec, kvs, plans);
}
