import type { NativeQuantType } from '../../binding';
import type { OptionMap } from '../common/options';
import type { GgufFile } from './gguf';
import type { ModelName } from './model-name';
import type { ResolvedModel } from './model.types';
import type { ModelfileMessage } from './modelfile.parser';

/** A create request in domain form: the spec's `{model, modelfile}` or current Ollama's JSON fields. */
export interface CreateModelCommand {
  model: string;
  /** Raw Modelfile text (the spec's form). When present, the JSON fields below are ignored. */
  modelfile?: string;
  /** Existing model name (or a local GGUF path) to base on. */
  from?: string;
  /** File name → `sha256:<hex>` of blobs already in the store (uploaded through /api/blobs). */
  files?: Record<string, string>;
  template?: string;
  system?: string;
  parameters?: Record<string, unknown>;
  messages?: ModelfileMessage[];
  license?: string | string[];
  /** Adapter file name → `sha256:<hex>` of an uploaded blob (JSON form; at most one). */
  adapters?: Record<string, string>;
  /** Quantization target (`q4_K_M`, `Q8_0`, …; case-insensitive); accepted with both forms. */
  quantize?: string;
  /**
   * Draft model of speculative decoding, JSON form (`draft_files`): file name → `sha256:<hex>` of an uploaded GGUF
   * blob (one file). The Modelfile form uses `DRAFT`.
   */
  draftFiles?: Record<string, string>;
  /** Quantization target of the draft (`draft_quantize`); needs a draft. Accepted with both forms. */
  draftQuantize?: string;
}

/**
 * Who asks for a create (reference/ollama-api.md §3.9): decides whether Modelfile FROM / ADAPTER values (and the
 * JSON form's `from`) may name files on the server. Only a client on this machine may; others upload blobs
 * (POST /api/blobs/sha256:…) and reference them (`FROM @sha256:…`, `files`, `adapters`), as Ollama's own client
 * does. A plain domain value: the controller derives it from the connection's remote address.
 */
export interface CreateRequester {
  /** True for a loopback client (127.0.0.0/8, ::1, ::ffff:127.x) or the daemon's own code; false otherwise. */
  local: boolean;
}

/** The requester of in-process callers (tests, tools): server paths allowed. HTTP callers pass their client's. */
export const LOCAL_REQUESTER: CreateRequester = { local: true };

/**
 * The one 400 a non-local client gets for a FROM / ADAPTER value that would name a file on the server. Fixed text,
 * whatever the path and whether it exists (Ollama's CVE-2024-39719 told remote clients which paths exist).
 */
export const SERVER_PATH_REFUSED_MESSAGE =
  'FROM and ADAPTER can name files on the server only for clients on the same machine: upload the file with ' +
  'POST /api/blobs/sha256:<digest of the file>, then use "FROM @sha256:<digest>" / "ADAPTER @sha256:<digest>" ' +
  '(or the "files" / "adapters" fields)';

/** Ollama's message for a FROM file that is not GGUF (reference/ollama-api.md §5.2). */
export const NOT_GGUF_MESSAGE = 'supplied file was not in GGUF format';

/** The base a new model is built on. */
export type CreateBase =
  | { kind: 'file'; path: string; gguf: GgufFile }
  | { kind: 'blob'; digest: string; size: number; gguf: GgufFile }
  | { kind: 'model'; model: ResolvedModel };

/** A LoRA adapter (or a vision projector) to store as a layer: a server file to import, or an uploaded blob. */
export type CreateAdapter = { kind: 'file'; path: string } | { kind: 'blob'; digest: string; size: number };

/**
 * A validated draft model: the GGUF to store (a server file to import, an uploaded blob, or the weights blob of an
 * existing model), its parsed header (for the config's `draft` object) and an optional quantization.
 */
export interface CreateDraft {
  source: { kind: 'file'; path: string } | { kind: 'blob'; digest: string; size: number };
  /** How the client named it (the DRAFT value or the `draft_files` file name), for logs. */
  label: string;
  gguf: GgufFile;
  /** Re-quantize the draft to this type (the source is F16/BF16/F32, checked). */
  quantize?: { type: NativeQuantType; from: string };
}

/** A validated create request: every check that can fail with 4xx has run. */
export interface CreatePlan {
  name: ModelName;
  /** Text after `looking for base model` (the FROM value as written). */
  baseLabel: string;
  base: CreateBase;
  template?: string;
  system?: string;
  /** New parameters; merged over the base model's (new keys win). */
  parameters?: OptionMap;
  messages?: ModelfileMessage[];
  licenses?: string[];
  renderer?: string;
  parser?: string;
  requires?: string;
  /** Replaces any inherited adapter. */
  adapter?: CreateAdapter;
  /** Vision projectors (Modelfile FROM lines after the first, GGUF `general.architecture` "clip"); replace inherited ones. */
  projectors?: CreateAdapter[];
  /**
   * The speculative-decoding draft model (Modelfile DRAFT / `draft_files`): stored as an
   * `application/vnd.ollama.image.draft` layer, replacing an inherited one; `quantize` re-quantizes it first.
   */
  draft?: CreateDraft;
  /** Re-quantize the weights to this type (the source is F16/BF16/F32, checked). */
  quantize?: { type: NativeQuantType; from: string };
  /** Which request form: the JSON form gets Ollama's quantization records, the spec's keeps its fixed list. */
  form: 'modelfile' | 'json';
}

/** One progress record of /api/create (spec §2 "Progress record"). */
export interface CreateProgress {
  status: string;
  digest?: string;
  total?: number;
  completed?: number;
}

/** How a create step reports progress: a status text or a whole record. */
export type CreateEmit = (record: string | CreateProgress) => void;
