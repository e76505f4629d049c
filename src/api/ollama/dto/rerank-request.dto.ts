// Beyond Ollama: /api/rerank and /v1/rerank, the Jina/Cohere shape llama-server serves at /rerank
// (vendor/llama.cpp/tools/server/README.md "POST /reranking").
import { ApiSchema } from '@nestjs/swagger';
import {
  GoAny,
  GoBool,
  GoInt,
  GoMap,
  GoString,
  GoStringArray,
  KEEP_ALIVE_FIELD,
  MODEL_FIELD,
  OPTIONS_FIELD,
} from '../../../common/validation';

const R = 'RerankRequest';

/** Body of POST /api/rerank and /v1/rerank. */
@ApiSchema({ name: 'RerankRequest' })
export class RerankRequestDto {
  static readonly goTypeName = 'llamad.RerankRequest';

  @GoString(R, { ...MODEL_FIELD, description: 'A reranking model (GGUF pooling_type rank, e.g. bge-reranker).' })
  model?: string;
  @GoString(R, { description: 'The query the documents are scored against.' }) query?: string;
  @GoStringArray(R, { description: 'Documents to score.' }) documents?: string[];
  @GoInt(R, { description: 'Keep the best N (default: all).' }) top_n?: number;
  @GoBool(R, { description: 'Add each document as `document: {text}`.' }) return_documents?: boolean;
  @GoAny(KEEP_ALIVE_FIELD) keep_alive?: unknown;
  @GoMap(R, OPTIONS_FIELD) options?: Record<string, unknown>;
}

/** Answer of /api/rerank and /v1/rerank: best first. */
export interface RerankResponseWire {
  model: string;
  object: 'list';
  results: { index: number; relevance_score: number; document?: { text: string } }[];
  usage: { prompt_tokens: number; total_tokens: number };
}
