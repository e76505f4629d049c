/**
 * What scripts/make-test-models.ts makes: the shapes and specs of the tiny test models and the bench models, and the
 * bench models quantized from them.
 */
import { join } from 'node:path';
import { REPO_ROOT } from '../src/config';
import { LLAMA2_CHAT_TEMPLATE, QWEN_TOOLS_JINJA_TEMPLATE } from './test-model-templates';

/** Bump when the output of a given spec changes (tensor layout, keys, RNG). */
export const GENERATOR_VERSION = 1;
/** Standard deviation of the random weights. */
export const WEIGHT_STD = 0.02;
/** llama_ftype MOSTLY_F16. */
export const FILE_TYPE_F16 = 1;

/** llama.cpp's vocab-only GGUF files (ggml-vocab-*.gguf), the source of every tokenizer. */
export const VOCAB_DIR = join(REPO_ROOT, 'vendor', 'llama.cpp', 'models');

/** Hyper-parameters of a llama-architecture model (sizes in elements, context in tokens). */
export interface LlamaShape {
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

/** Hyper-parameters of a bert-architecture (embedding) model (sizes in elements, context in tokens). */
export interface BertShape {
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

/** One model to make: its file, GGUF name, vocab file, shape, group (tiny: tests; bench) and chat template. */
export interface ModelSpec {
  file: string;
  name: string;
  group: 'tiny' | 'bench';
  /** Vocabulary file name in vendor/llama.cpp/models. */
  vocab: string;
  shape: LlamaShape | BertShape;
  /** tokenizer.chat_template to set (overrides the vocabulary's own). */
  chatTemplate?: string;
  /**
   * Llama only: blocks from this index on write nothing into the residual stream (their attention-output and
   * FFN-down weights are zero), so the model's logits are those of its first `silentLayersFrom` blocks alone — the
   * same seeds truncated to that many blocks make a draft that always agrees (AGREEING_PAIRS).
   */
  silentLayersFrom?: number;
}

/** The tiny llama shape the test models share (a few MB). */
export const TINY_LLAMA: LlamaShape = {
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

/** The tiny bert shape of the test embedding model. */
export const TINY_BERT: BertShape = {
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
export const BENCH_1B_SHAPE = {
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

/**
 * The shape of the bench's agreeing pair (bench-agree-f16 and bench-agree-draft-f16, issue 35): 16 layers 1024 wide
 * over llama-spm's 32k vocabulary, about 265 M parameters (530 MB in F16); its 1-layer draft is about 47 M (95 MB),
 * so a draft token costs about a fifth of a target token.
 */
export const BENCH_AGREE_SHAPE = {
  arch: 'llama',
  nEmbd: 1024,
  nLayer: 16,
  nHead: 16,
  nHeadKv: 4,
  nFf: 4096,
  contextLength: 4096,
  ropeFreqBase: 500000,
  rmsEps: 1e-5,
} as const;

/**
 * A target and its draft that always agree: the target's blocks 1.. are silent (ModelSpec.silentLayersFrom 1), so
 * its logits are exactly those of block 0; the draft is the same name (so the same seeds: embeddings, output and
 * block 0) truncated to that one block. Greedy decoding of either gives the same tokens, so every drafted token is
 * accepted (up to the kernels' rounding with the batch shape). `tiny` is the test pair (test/native/
 * speculative-pair.test.ts), `bench` the bench's (section speculative).
 */
function agreeingPair(name: string, group: ModelSpec['group'], shape: LlamaShape): [ModelSpec, ModelSpec] {
  const common = { name, group, vocab: 'ggml-vocab-llama-spm.gguf', chatTemplate: LLAMA2_CHAT_TEMPLATE };
  return [
    { ...common, file: `${name}-f16.gguf`, shape, silentLayersFrom: 1 },
    { ...common, file: `${name}-draft-f16.gguf`, shape: { ...shape, nLayer: 1 } },
  ];
}

/**
 * The agreeing pairs: the tiny one (512 wide, 4 blocks, 3 of them silent; narrower, the tied embeddings dominate and
 * greedy output only repeats the prompt's last token, which any two models agree on) and the bench's (16 blocks,
 * 15 of them silent).
 */
export const AGREEING_PAIRS = {
  tiny: agreeingPair('tiny-agree', 'tiny', { ...TINY_LLAMA, nEmbd: 512, nHead: 8, nFf: 1024, nLayer: 4 }),
  bench: agreeingPair('bench-agree', 'bench', BENCH_AGREE_SHAPE),
};

/** Every model the generator writes from random weights (not the quantized ones). */
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
    // Multi-head attention (one K/V head per q head): the CPU's flash-attention default differs from the GQA models'.
    file: 'tiny-llama-mha.gguf',
    name: 'tiny-llama-mha',
    group: 'tiny',
    vocab: 'ggml-vocab-llama-spm.gguf',
    shape: { ...TINY_LLAMA, nHeadKv: TINY_LLAMA.nHead },
  },
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
  ...AGREEING_PAIRS.tiny,
  ...AGREEING_PAIRS.bench,
];

/** Made from the F16 bench models by the addon's quantizer. */
export const BENCH_QUANTIZED = [
  { file: 'bench-1b-q4_0.gguf', source: 'bench-1b-f16.gguf', type: 'Q4_0' as const },
  { file: 'bench-1b-draft-q4_0.gguf', source: 'bench-1b-draft-f16.gguf', type: 'Q4_0' as const },
];
/** One quantized bench model: its file, the F16 file it is made from and the quantization type. */
export type QuantizedSpec = (typeof BENCH_QUANTIZED)[number];
