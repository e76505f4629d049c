import { OptionMap } from '../common/options';
import type { GgufModelDetails } from './gguf';
import { Manifest, ModelConfig } from './manifest';
import { ModelName } from './model-name';
import { ModelfileMessage } from './modelfile.parser';

/** What a model can do (reference/ollama-api.md §8.7); /api/show lists them in Ollama's order (see deriveCapabilities). */
export type ModelCapability = 'completion' | 'embedding' | 'vision' | 'audio' | 'tools' | 'thinking' | 'insert';

/** Facts read from a model's GGUF weights (cached per blob digest: blobs never change): the GGUF details plus vision. */
export interface ModelFacts extends GgufModelDetails {
  /** Whether the GGUF itself carries a vision encoder (`<arch>.vision.*` or `clip.*` keys). */
  vision?: boolean;
}

/** `details` of /api/tags and /api/show (wire names; §3.6). */
export interface ModelDetails {
  parent_model: string;
  format: string;
  family: string;
  families: string[] | null;
  parameter_size: string;
  quantization_level: string;
}

/**
 * A local model resolved from its manifest: everything inference and /api/show need. Produced by
 * ModelsService.resolve(); immutable.
 */
export interface ResolvedModel {
  /** The name as stored on disk (canonical case). */
  name: ModelName;
  /** Shortest display name, e.g. `tiny:latest`. */
  shortName: string;
  manifest: Manifest;
  /** Hex sha256 of the manifest bytes. */
  manifestDigest: string;
  modifiedAt: Date;
  /** Sum of layer sizes + config size, bytes. */
  size: number;
  /** `sha256:<hex>` of the weights layer. */
  modelDigest: string;
  /** Absolute path of the weights blob (GGUF). */
  modelPath: string;
  /** Absolute paths of projector blobs (vision); empty for text models. */
  projectorPaths: string[];
  /** Absolute paths of adapter blobs. */
  adapterPaths: string[];
  /**
   * Absolute path of the speculative-decoding draft model blob (`application/vnd.ollama.image.draft` layer; the
   * first when there are several), or undefined when the model has none.
   */
  draftPath?: string;
  config: ModelConfig;
  /** Modelfile TEMPLATE (a Go template), when the model has a template layer. */
  template?: string;
  /** Modelfile SYSTEM. */
  system?: string;
  /** Default options from the params layer (Modelfile PARAMETERs). */
  params: OptionMap;
  /** Conversation baked in with MESSAGE. */
  messages: ModelfileMessage[];
  licenses: string[];
  facts: ModelFacts;
  capabilities: ModelCapability[];
}
