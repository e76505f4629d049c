/**
 * Manifest and config-blob formats of Ollama's model store (reference/ollama-api.md §10.2–10.3), byte-compatible
 * so a store written by Ollama works here unchanged and the other way round.
 */
import { formatParameterCount, type GgufModelDetails } from './gguf/gguf-details';

/** Media types used in manifests (§10.2 table). */
export const MediaType = {
  MANIFEST: 'application/vnd.docker.distribution.manifest.v2+json',
  CONFIG: 'application/vnd.docker.container.image.v1+json',
  MODEL: 'application/vnd.ollama.image.model',
  PROJECTOR: 'application/vnd.ollama.image.projector',
  ADAPTER: 'application/vnd.ollama.image.adapter',
  DRAFT: 'application/vnd.ollama.image.draft',
  TEMPLATE: 'application/vnd.ollama.image.template',
  /** Legacy name of the template layer; still read. */
  PROMPT: 'application/vnd.ollama.image.prompt',
  SYSTEM: 'application/vnd.ollama.image.system',
  PARAMS: 'application/vnd.ollama.image.params',
  MESSAGES: 'application/vnd.ollama.image.messages',
  LICENSE: 'application/vnd.ollama.image.license',
} as const;

/** One layer (or the config) of a manifest. `digest` is `sha256:<64 hex>`, `size` in bytes. */
export interface ManifestLayer {
  mediaType: string;
  digest: string;
  size: number;
  /** Source model (shortest name) of a layer inherited through create-from-model. */
  from?: string;
  /** File name of safetensors layers. */
  name?: string;
}

/** A manifest file (`manifests/<host>/<namespace>/<model>/<tag>`). */
export interface Manifest {
  schemaVersion: number;
  mediaType: string;
  config: ManifestLayer;
  layers: ManifestLayer[];
}

/** The config blob (§10.3). Unknown keys of configs written by other tools are kept when read. */
export interface ModelConfig {
  model_format: string;
  model_family: string;
  model_families: string[] | null;
  /** Human parameter count, e.g. `8.0B` → details.parameter_size. */
  model_type: string;
  /** GGUF file type name, e.g. `Q4_K_M` → details.quantization_level. */
  file_type: string;
  renderer?: string;
  parser?: string;
  requires?: string;
  /** The draft model of speculative decoding, when the manifest has a draft layer (§10.3). */
  draft?: DraftConfig;
  architecture: string;
  os: string;
  [extra: string]: unknown;
}

/**
 * The config's `draft` object (Ollama's `model.Draft`, types/model/config.go; reference/ollama-api.md §10.3):
 * `{"model_format":"gguf","architecture":"<draft GGUF general.architecture>"}`, both omitted when empty.
 */
export interface DraftConfig {
  model_format?: string;
  architecture?: string;
}

/**
 * Encodes a value the way Go's `json.NewEncoder(w).Encode(v)` does (which Ollama uses for manifests, configs and
 * params layers): compact, `<`, `>`, `&`, U+2028 and U+2029 escaped as `\u003c` etc., and a trailing newline.
 * Identical content therefore gets the same digest as in Ollama. Object keys are written in insertion order:
 * callers build structs in Go field order and maps with sorted keys.
 */
export function goJsonEncode(value: unknown): string {
  return (
    JSON.stringify(value)
      .replace(/</g, '\\u003c')
      .replace(/>/g, '\\u003e')
      .replace(/&/g, '\\u0026')
      .replace(/\u2028/g, '\\u2028')
      .replace(/\u2029/g, '\\u2029') + '\n'
  );
}

/** Builds a manifest object with the fields in Go's struct order (schemaVersion, mediaType, config, layers). */
export function buildManifest(config: ManifestLayer, layers: ManifestLayer[]): Manifest {
  const layer = (l: ManifestLayer): ManifestLayer => {
    const out: ManifestLayer = { mediaType: l.mediaType, digest: l.digest, size: l.size };
    if (l.from) out.from = l.from;
    if (l.name) out.name = l.name;
    return out;
  };
  return { schemaVersion: 2, mediaType: MediaType.MANIFEST, config: layer(config), layers: layers.map(layer) };
}

/**
 * The config of a GGUF model from its facts (what Ollama's create writes): format `gguf`, family and families from the
 * architecture, model type from the parameter count (`19.74M`), file type; `extra` adds renderer/parser/requires.
 */
export function ggufModelConfig(
  facts: Pick<GgufModelDetails, 'architecture' | 'parameterCount' | 'fileType'>,
  extra: { renderer?: string; parser?: string; requires?: string; draft?: DraftConfig } = {},
): ModelConfig {
  return buildModelConfig({
    format: 'gguf',
    family: facts.architecture,
    families: [facts.architecture],
    modelType: formatParameterCount(facts.parameterCount),
    fileType: facts.fileType,
    ...extra,
  });
}

/** Builds a config blob object in Go's ConfigV2 field order; optional fields only when set. */
export function buildModelConfig(fields: {
  format: string;
  family: string;
  families: string[];
  modelType: string;
  fileType: string;
  renderer?: string;
  parser?: string;
  requires?: string;
  draft?: DraftConfig;
}): ModelConfig {
  const config: ModelConfig = {
    model_format: fields.format,
    model_family: fields.family,
    model_families: fields.families,
    model_type: fields.modelType,
    file_type: fields.fileType,
    architecture: 'amd64',
    os: 'linux',
  };
  // Go struct order puts renderer/parser/requires/draft before architecture/os: rebuild in that order.
  if (fields.renderer || fields.parser || fields.requires || fields.draft) {
    const { architecture, os, ...head } = config;
    return {
      ...head,
      ...(fields.renderer ? { renderer: fields.renderer } : {}),
      ...(fields.parser ? { parser: fields.parser } : {}),
      ...(fields.requires ? { requires: fields.requires } : {}),
      ...(fields.draft ? { draft: fields.draft } : {}),
      architecture,
      os,
    };
  }
  return config;
}

/**
 * A config with its `draft` object set (replacing any), placed where Go's ConfigV2 writes it: after the other fields,
 * just before `architecture` and `os` (types/model/config.go).
 */
export function withDraftConfig(config: ModelConfig, draft: DraftConfig): ModelConfig {
  const { architecture, os, draft: _old, ...head } = config;
  return { ...head, draft, architecture, os };
}

/** Whether a string is a `sha256:<64 hex>` digest (the form used inside manifests). */
export function isDigest(s: string): boolean {
  return /^sha256:[0-9a-f]{64}$/.test(s);
}

/** Digests of a manifest's config and layers (`sha256:<hex>`), in order. */
export function manifestDigestsOf(manifest: Manifest): string[] {
  return [manifest.config.digest, ...manifest.layers.map((l) => l.digest)];
}
