// Ollama `api.ListResponse`, `api.ShowResponse`, `api.ProgressResponse` (api/types.go) — wire shapes.
// Spec: seed §2 "Local model entry", "Model information", "Progress record"; reference/ollama-api.md §3.6, §3.8.
import { ModelDetails } from '../../../models/model.types';

/** One entry of GET /api/tags. */
export interface ListModelWire {
  name: string;
  model: string;
  /** ISO 8601 UTC (`…Z`), the manifest file's mtime. */
  modified_at: string;
  /** Bytes: layers + config. */
  size: number;
  /** Hex sha256 of the manifest bytes. */
  digest: string;
  details: ModelDetails;
  /** What the model can do (§8.7); omitted when its weights cannot be read. */
  capabilities?: string[];
}

/** GET /api/tags. */
export interface ListResponseWire {
  models: ListModelWire[];
}

/** POST /api/show (optional fields omitted when empty, as Go's omitempty). */
export interface ShowResponseWire {
  license?: string;
  modelfile: string;
  parameters?: string;
  template?: string;
  system?: string;
  details: ModelDetails;
  messages?: Array<{ role: string; content: string }>;
  model_info: Record<string, unknown>;
  tensors?: Array<{ name: string; type: string; shape: number[] }>;
  capabilities: string[];
  modified_at: string;
}

/** One progress record of /api/create (the spec adds `done`). */
export interface ProgressWire {
  status: string;
  digest?: string;
  total?: number;
  completed?: number;
  done: boolean;
}
