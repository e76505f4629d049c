import { makeModel } from '../../scripts/test-model-files';
import { MODEL_SPECS, type ModelSpec } from '../../scripts/test-model-specs';

/**
 * Writes `tiny-llama-bad-heads.gguf` into `dir`: tiny-llama-spm with 4 attention heads but 3 KV heads (K/V tensors
 * shaped for 3). The weights load, but llama.cpp's attention cannot broadcast 4 query heads over 3 KV heads: building
 * the attention graph hits `GGML_ASSERT(ggml_can_mul_mat(a, b)) failed` (`…(k, q)` with flash attention) and aborts the
 * process — with this addon already when the context is created (llama.cpp reserves the compute graph then), else on
 * the first decode. The runner-isolation e2e test's hostile model.
 * @returns the file's path.
 */
export async function makeBadHeadsModel(dir: string): Promise<string> {
  const base = MODEL_SPECS.find((m) => m.file === 'tiny-llama-spm.gguf');
  if (!base || base.shape.arch !== 'llama') throw new Error('tiny-llama-spm spec missing');
  const spec: ModelSpec = {
    ...base,
    file: 'tiny-llama-bad-heads.gguf',
    name: 'tiny-llama-bad-heads',
    shape: { ...base.shape, nHeadKv: 3 },
  };
  return makeModel(spec, dir, true);
}
