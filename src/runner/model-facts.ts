import type { NativeModel } from '../../binding';

/** Whether the GGUF metadata marks an embedding model (`<arch>.pooling_type`, reference/ollama-api.md §8.7). */
export function isEmbeddingModel(model: NativeModel): boolean {
  const meta = model.metadata();
  const arch = meta['general.architecture'];
  return arch !== undefined && meta[`${arch}.pooling_type`] !== undefined;
}

/** Whether the GGUF is a reranker (`<arch>.pooling_type` 4, RANK) and its rerank prompt template, if any. */
export function rerankInfo(model: NativeModel): { reranker?: boolean; rerankTemplate?: string } {
  const meta = model.metadata();
  const arch = meta['general.architecture'];
  const reranker = arch !== undefined && meta[`${arch}.pooling_type`] === '4';
  const template = meta['tokenizer.chat_template.rerank'];
  return { ...(reranker ? { reranker } : {}), ...(template ? { rerankTemplate: template } : {}) };
}
