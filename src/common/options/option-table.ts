/**
 * Ollama's option catalogue: every `options` key / Modelfile `PARAMETER` name with its type and default
 * (reference/ollama-api.md §4.1, from `api.Options` + `api.Runner`). Shared by the Modelfile parser (Models) and the
 * option merge (Inference), so it lives in common/.
 */

/** Value type of an option, as Go declares the field. */
export type OptionKind = 'int' | 'float' | 'bool' | 'string[]';

/** Whether changing the option needs a reload of the model (load-time "Runner" options) or not (per request). */
export type OptionScope = 'load' | 'request';

export interface OptionSpec {
  kind: OptionKind;
  scope: OptionScope;
  /** Go type name printed in type errors (`option "x" must be of type integer`). */
  goType: 'integer' | 'float32' | 'boolean' | 'array';
  /**
   * Only a Modelfile PARAMETER (a model's params layer) may set it; a request's `options` key is ignored like an
   * unknown key (beyond Ollama: `rpc`, which points the daemon at other machines).
   */
  modelfileOnly?: boolean;
}

/** Every option Ollama accepts today. Order follows §4.1. */
export const OPTION_TABLE: Readonly<Record<string, OptionSpec>> = {
  // Load-time options: a change forces a reload (§7.2 needsReload).
  num_ctx: { kind: 'int', scope: 'load', goType: 'integer' },
  num_batch: { kind: 'int', scope: 'load', goType: 'integer' },
  num_gpu: { kind: 'int', scope: 'load', goType: 'integer' },
  main_gpu: { kind: 'int', scope: 'load', goType: 'integer' },
  use_mmap: { kind: 'bool', scope: 'load', goType: 'boolean' },
  num_thread: { kind: 'int', scope: 'load', goType: 'integer' },
  // Beyond Ollama: llama.cpp RPC workers holding the model's layers (`PARAMETER rpc host:port,host:port`, or `none`
  // to opt out of LLAMAD_RPC_SERVERS); Modelfile only. Stored as the list of endpoints.
  rpc: { kind: 'string[]', scope: 'load', goType: 'array', modelfileOnly: true },
  // Per-request sampling options.
  num_keep: { kind: 'int', scope: 'request', goType: 'integer' },
  seed: { kind: 'int', scope: 'request', goType: 'integer' },
  num_predict: { kind: 'int', scope: 'request', goType: 'integer' },
  top_k: { kind: 'int', scope: 'request', goType: 'integer' },
  top_p: { kind: 'float', scope: 'request', goType: 'float32' },
  min_p: { kind: 'float', scope: 'request', goType: 'float32' },
  typical_p: { kind: 'float', scope: 'request', goType: 'float32' },
  repeat_last_n: { kind: 'int', scope: 'request', goType: 'integer' },
  temperature: { kind: 'float', scope: 'request', goType: 'float32' },
  repeat_penalty: { kind: 'float', scope: 'request', goType: 'float32' },
  presence_penalty: { kind: 'float', scope: 'request', goType: 'float32' },
  frequency_penalty: { kind: 'float', scope: 'request', goType: 'float32' },
  stop: { kind: 'string[]', scope: 'request', goType: 'array' },
  // Speculative decoding: Ollama's draft length (a Runner option there, needing a reload; here per request, since the
  // engine drafts per task), and beyond Ollama n-gram drafting (prompt lookup) with or without a draft model.
  draft_num_predict: { kind: 'int', scope: 'request', goType: 'integer' },
  draft_ngram: { kind: 'bool', scope: 'request', goType: 'boolean' },
};

/**
 * Options Ollama removed but old clients and Modelfiles still send (§4.1). In requests they are ignored like any
 * unknown key; in a Modelfile they are skipped with a warning instead of failing with `unknown parameter`.
 */
export const DEPRECATED_OPTIONS: ReadonlySet<string> = new Set([
  'mirostat',
  'mirostat_tau',
  'mirostat_eta',
  'low_vram',
  'f16_kv',
  'logits_all',
  'vocab_only',
  'use_mlock',
  'penalize_newline',
  'tfs_z',
  'numa',
  'num_gqa',
  'rope_frequency_base',
  'rope_frequency_scale',
  'embedding_only',
]);

/** A typed option value as stored in a params layer and merged into requests. */
export type OptionValue = number | boolean | string[];

/** A bag of typed options keyed by Ollama's option names (snake_case wire names). */
export type OptionMap = Record<string, OptionValue>;
