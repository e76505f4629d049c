import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from '../../src/config';

/** Directory of the generated test models: $LLAMAD_MODELS_DIR or <repo>/test/fixtures/models (absolute). */
export const MODELS_DIR = process.env.LLAMAD_MODELS_DIR
  ? resolve(process.env.LLAMAD_MODELS_DIR)
  : join(REPO_ROOT, 'test', 'fixtures', 'models');

/** llama arch, SPM vocabulary (32000 tokens), llama-2 [INST] chat template; 4.39M params, F16. */
export const TINY_LLAMA_SPM = join(MODELS_DIR, 'tiny-llama-spm.gguf');
/** tiny-llama-spm's shape with multi-head attention (as many K/V heads as q heads). */
export const TINY_LLAMA_MHA = join(MODELS_DIR, 'tiny-llama-mha.gguf');
/** llama arch, qwen2 BPE vocabulary (151936 tokens), ChatML template, `<|im_end|>` ends generation; 19.7M params. */
export const TINY_QWEN2 = join(MODELS_DIR, 'tiny-qwen2.gguf');
/**
 * tiny-qwen2's shape and vocabulary with a different random seed and a tools-capable Jinja template (ChatML + Hermes
 * `<tool_call>` JSON, scripts/test-model-templates.ts); create it with `TEMPLATE` QWEN_TOOLS_GO_TEMPLATE for rendered
 * mode, without for native mode.
 */
export const TINY_QWEN2_TOOLS = join(MODELS_DIR, 'tiny-qwen2-tools.gguf');
export { QWEN_TOOLS_GO_TEMPLATE } from '../../scripts/test-model-templates';
/** bert arch (embeddings), WPM vocabulary, context 512, mean pooling, 128-dim output. */
export const TINY_BERT = join(MODELS_DIR, 'tiny-bert.gguf');
/** nomic-bert arch (embeddings, RoPE), same vocabulary, context 2048, mean pooling, 128-dim output. */
export const TINY_NOMIC_BERT = join(MODELS_DIR, 'tiny-nomic-bert.gguf');
/** bert reranker (bge-reranker shape): rank pooling, classifier head cls / cls.output, one score per input. */
export const TINY_BERT_RERANKER = join(MODELS_DIR, 'tiny-bert-reranker.gguf');

/** Vision projector (mmproj, clip "mlp") for the 128-wide tiny llama models: 32×32 input, 4 image tokens. */
export const TINY_MMPROJ = join(MODELS_DIR, 'tiny-mmproj.gguf');
/**
 * Audio projector (clip "qwen2a": Whisper encoder + one linear layer, 80 mel bins, 16 kHz) for the 128-wide tiny
 * llama models: 750 audio embeddings per 30 s chunk (a clip under 30 s is one chunk; audio-fixtures whisperChunks).
 */
export const TINY_AUDIO_MMPROJ = join(MODELS_DIR, 'tiny-audio-mmproj.gguf');
/** Both encoders in one projector: tiny-mmproj's vision shape ("mlp") and tiny-audio-mmproj's audio shape ("qwen2a"). */
export const TINY_OMNI_MMPROJ = join(MODELS_DIR, 'tiny-omni-mmproj.gguf');

/** Rank-4 LoRA adapter of tiny-llama-spm (scripts/test-model-extras.ts TINY_LLAMA_SPM_LORA). */
export const TINY_LLAMA_SPM_LORA = join(MODELS_DIR, 'tiny-llama-spm-lora.gguf');
/**
 * A second LoRA adapter of tiny-llama-spm (rank 8, other values: TINY_LLAMA_SPM_LORA2): its greedy output differs from
 * the first adapter's and from the base model's.
 */
export const TINY_LLAMA_SPM_LORA2 = join(MODELS_DIR, 'tiny-llama-spm-lora2.gguf');

/**
 * An agreeing pair (scripts/test-model-specs.ts AGREEING_PAIRS.tiny): a 4-block llama-spm model whose blocks 1–3
 * write nothing into the residual stream, and its 1-block draft of the same seeds; greedy decoding of either gives
 * the same tokens.
 */
export const TINY_AGREE = join(MODELS_DIR, 'tiny-agree-f16.gguf');
export const TINY_AGREE_DRAFT = join(MODELS_DIR, 'tiny-agree-draft-f16.gguf');

const ALL = [
  TINY_LLAMA_SPM,
  TINY_QWEN2,
  TINY_QWEN2_TOOLS,
  TINY_LLAMA_MHA,
  TINY_BERT,
  TINY_NOMIC_BERT,
  TINY_BERT_RERANKER,
  TINY_MMPROJ,
  TINY_AUDIO_MMPROJ,
  TINY_OMNI_MMPROJ,
  TINY_LLAMA_SPM_LORA,
  TINY_LLAMA_SPM_LORA2,
  TINY_AGREE,
  TINY_AGREE_DRAFT,
];

/**
 * Makes sure the tiny test models exist: when one is missing, runs the generator (dist/scripts/make-test-models.js,
 * about a second) synchronously into MODELS_DIR.
 * @throws Error with the generator's output when it fails or is not compiled
 */
export function ensureTestModels(): void {
  if (ALL.every((p) => existsSync(p))) return;
  const script = join(REPO_ROOT, 'dist', 'scripts', 'make-test-models.js');
  if (!existsSync(script)) throw new Error(`test models missing and ${script} not built: run \`npm run build\``);
  const r = spawnSync(process.execPath, [script], {
    env: { ...process.env, LLAMAD_MODELS_DIR: MODELS_DIR },
    encoding: 'utf8',
  });
  if (r.status !== 0) {
    throw new Error(`make-test-models failed (status ${String(r.status)}):\n${r.stdout ?? ''}${r.stderr ?? ''}`);
  }
  const missing = ALL.filter((p) => !existsSync(p));
  if (missing.length > 0) throw new Error(`make-test-models did not write ${missing.join(', ')}`);
}
