// Ollama `api.EmbedRequest` / `api.EmbeddingRequest` (api/types.go) — wire names kept exactly.
// Spec: seed §4 "POST /api/embed"; details: reference/ollama-api.md §3.4, §3.5.
import { ApiSchema } from '@nestjs/swagger';
import {
  GoAny,
  GoBool,
  GoInt,
  GoMap,
  GoString,
  KEEP_ALIVE_FIELD,
  MODEL_FIELD,
  OPTIONS_FIELD,
} from '../../../common/validation';

const E = 'EmbedRequest';
const L = 'EmbeddingRequest';

/** Body of POST /api/embed. `input` is a string or an array of strings (checked by the service). */
@ApiSchema({ name: 'EmbedRequest' })
export class EmbedRequestDto {
  static readonly goTypeName = 'api.EmbedRequest';

  @GoString(E, MODEL_FIELD) model?: string;
  @GoAny({
    oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
    description: 'Text(s) to embed.',
  })
  input?: unknown;
  @GoAny(KEEP_ALIVE_FIELD) keep_alive?: unknown;
  @GoBool(E, { description: 'Default true: cut inputs to the context length; false: 400 instead.' })
  truncate?: boolean;
  @GoInt(E, { description: 'Cut vectors to this many dimensions (re-normalized).' }) dimensions?: number;
  @GoMap(E, OPTIONS_FIELD) options?: Record<string, unknown>;
}

/** Body of the legacy POST /api/embeddings (one `prompt`). */
@ApiSchema({ name: 'EmbeddingsRequest' })
export class EmbeddingsRequestDto {
  static readonly goTypeName = 'api.EmbeddingRequest';

  @GoString(L, MODEL_FIELD) model?: string;
  @GoString(L) prompt?: string;
  @GoAny(KEEP_ALIVE_FIELD) keep_alive?: unknown;
  @GoMap(L, OPTIONS_FIELD) options?: Record<string, unknown>;
}

/** Answer of POST /api/embed. Durations in ns; `prompt_eval_count` = tokens over all inputs. */
export interface EmbedResponseWire {
  model: string;
  embeddings: number[][];
  total_duration?: number;
  load_duration?: number;
  prompt_eval_count?: number;
}

/** Answer of POST /api/embeddings. */
export interface EmbeddingsResponseWire {
  embedding: number[];
}
