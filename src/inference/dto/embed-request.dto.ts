// Ollama `api.EmbedRequest` / `api.EmbeddingRequest` (api/types.go) — wire names kept exactly.
// Spec: seed §4 "POST /api/embed"; details: reference/ollama-api.md §3.4, §3.5.
import { GoAny, GoBool, GoInt, GoMap, GoString } from '../../common/validation';

const E = 'EmbedRequest';
const L = 'EmbeddingRequest';

/** Body of POST /api/embed. `input` is a string or an array of strings (checked by the service). */
export class EmbedRequestDto {
  static readonly goTypeName = 'api.EmbedRequest';

  @GoString(E) model?: string;
  @GoAny() input?: unknown;
  @GoAny() keep_alive?: unknown;
  @GoBool(E) truncate?: boolean;
  @GoInt(E) dimensions?: number;
  @GoMap(E) options?: Record<string, unknown>;
}

/** Body of the legacy POST /api/embeddings (one `prompt`). */
export class EmbeddingsRequestDto {
  static readonly goTypeName = 'api.EmbeddingRequest';

  @GoString(L) model?: string;
  @GoString(L) prompt?: string;
  @GoAny() keep_alive?: unknown;
  @GoMap(L) options?: Record<string, unknown>;
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
