import { stat } from 'node:fs/promises';
import { FACTS_MAX_ARRAY_ITEMS, readGguf } from '../models/gguf';

/*
 * The memory a multimodal projector (RunnerSpec.projectorPath, an mmproj GGUF) adds to a runner: its weights (the
 * file, as for the model) and the compute buffer of each encoder it carries — vision and/or audio (clip.cpp loads a
 * clip context per modality: clip.has_vision_encoder / clip.has_audio_encoder; a legacy file without those keys is
 * a vision projector).
 */

/** Whisper-type audio encoders (qwen2a, ultravox, voxtral…): one 30 s chunk = 3000 mel frames → 1500 positions. */
export const AUDIO_ENCODER_POSITIONS = 1500;

/** f32 activation rows of one encoder layer kept live at once by ggml's allocator (input, norm, QKV, FFN…): a bound. */
const ACTIVATION_ROWS = 8;

function num(v: unknown): number {
  if (typeof v === 'bigint') return Number(v);
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

/**
 * Compute buffer of one encoder pass, bytes: f32 activations (ACTIVATION_ROWS × positions × width) plus one attention
 * score matrix per head (positions² × heads, f32; without flash attention the largest tensor of the graph).
 */
export function encoderComputeBytes(positions: number, width: number, heads: number): number {
  return 4 * (ACTIVATION_ROWS * positions * width + positions * positions * Math.max(1, heads));
}

/**
 * Bytes a projector adds to a runner: file size + the compute buffer of each encoder it carries
 * ({@link encoderComputeBytes}: vision over (image_size / patch_size)² patches, audio over
 * {@link AUDIO_ENCODER_POSITIONS} positions, each at its `clip.<modality>.embedding_length` width and
 * `attention.head_count` heads). Never rejects: a missing file counts 0, an unreadable header the file size only
 * (the load reports the problem).
 */
export async function projectorBytes(path: string): Promise<number> {
  let fileSize: number;
  try {
    fileSize = (await stat(path)).size;
  } catch {
    return 0;
  }
  try {
    const md = (await readGguf(path, { maxArrayItems: FACTS_MAX_ARRAY_ITEMS })).metadata as Record<string, unknown>;
    const legacy = md['clip.has_vision_encoder'] === undefined && md['clip.has_audio_encoder'] === undefined;
    let compute = 0;
    if (legacy || md['clip.has_vision_encoder'] === true) {
      const side = num(md['clip.vision.image_size']) / Math.max(1, num(md['clip.vision.patch_size']));
      compute += encoderComputeBytes(
        Math.ceil(side) ** 2,
        num(md['clip.vision.embedding_length']),
        num(md['clip.vision.attention.head_count']),
      );
    }
    if (md['clip.has_audio_encoder'] === true) {
      compute += encoderComputeBytes(
        AUDIO_ENCODER_POSITIONS,
        num(md['clip.audio.embedding_length']),
        num(md['clip.audio.attention.head_count']),
      );
    }
    return fileSize + compute;
  } catch {
    return fileSize;
  }
}
