import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { InternalError, InvalidRequestError, ModelNotFoundError } from '../common/errors';
import { checkRpcAllowed, OptionMap, sanitizeStoredParams } from '../common/options';
import { DaemonConfig } from '../config';
import { FACTS_MAX_ARRAY_ITEMS, modelDetails, readGguf } from './gguf';
import { ggufModelConfig, ManifestLayer, MediaType, ModelConfig } from './manifest';
import { isModelVisible } from './model-access';
import { ModelName } from './model-name';
import { MODEL_STORE, ModelStore, StoredManifest } from './model-store';
import { ModelCapability, ModelDetails, ModelFacts, ResolvedModel } from './model.types';
import { ModelfileMessage } from './modelfile.parser';
import { describeIoError } from './store-errors';
import { projectorModalities, ProjectorModalities } from './projector-modalities';
import { goTemplateCapabilities, jinjaTemplateCapabilities } from './template-support';

/**
 * Capabilities from GGUF facts, templates and layers (reference/ollama-api.md §8.7), in Ollama's order:
 * `completion` or `embedding` (GGUF `pooling_type`, or a bert-family architecture), `vision` (GGUF vision keys or a
 * projector layer with a vision encoder), `audio` (a projector layer with an audio encoder), `tools`, `insert`,
 * `thinking`. Tools/insert/thinking come from the Go template layer when the model has one, else from the GGUF Jinja
 * chat template (no insert); embedding models get none of them.
 * @param goTemplate the TEMPLATE layer text, if any.
 * @param projector the encoders of the model's projector layers together ({@link projectorModalities}); undefined =
 *   no projector layer.
 */
export function deriveCapabilities(
  facts: ModelFacts,
  goTemplate: string | undefined,
  projector: ProjectorModalities | undefined,
): ModelCapability[] {
  const caps: ModelCapability[] = [];
  const embedding = facts.poolingType !== undefined || /bert/i.test(facts.architecture);
  caps.push(embedding ? 'embedding' : 'completion');
  if (facts.vision || projector?.vision) caps.push('vision');
  if (projector?.audio) caps.push('audio');
  if (!embedding) {
    const t =
      goTemplate !== undefined
        ? goTemplateCapabilities(goTemplate)
        : { ...jinjaTemplateCapabilities(facts.chatTemplate ?? ''), insert: false };
    if (t.tools) caps.push('tools');
    if (t.insert) caps.push('insert');
    if (t.thinking) caps.push('thinking');
  }
  return caps;
}

/** `details` of tags/show from a config (§3.6): parent_model is always empty for local GGUF models. */
export function configDetails(config: ModelConfig): ModelDetails {
  return {
    parent_model: '',
    format: config.model_format ?? '',
    family: config.model_family ?? '',
    families: config.model_families ?? null,
    parameter_size: config.model_type ?? '',
    quantization_level: config.file_type ?? '',
  };
}

/** `details` of a model whose config cannot be read: every field empty. */
export const EMPTY_DETAILS: Readonly<ModelDetails> = {
  parent_model: '',
  format: '',
  family: '',
  families: null,
  parameter_size: '',
  quantization_level: '',
};

/** Bytes of a stored model: layers + config. */
export function storedSize(stored: StoredManifest): number {
  const { manifest } = stored;
  return manifest.layers.reduce((sum, l) => sum + (l.size ?? 0), manifest.config.size ?? 0);
}

/**
 * Name resolution and capabilities (ARCHITECTURE.md §13): a model reference → its manifest, layers, config and GGUF
 * facts (ResolvedModel), which inference, /api/show and create build on. GGUF facts and configs are cached per
 * digest (blobs are immutable, so entries never go stale).
 */
@Injectable()
export class ModelResolverService {
  private readonly logger = new Logger(ModelResolverService.name);
  /** GGUF facts per weights digest; blobs are immutable, so entries never go stale. */
  private readonly facts = new Map<string, Promise<ModelFacts>>();
  private readonly projectors = new Map<string, Promise<ProjectorModalities>>();
  /** Parsed config per config digest. */
  private readonly configs = new Map<string, Promise<ModelConfig>>();

  /**
   * @param store the model store.
   * @param config the daemon's settings: LLAMAD_RPC_SERVERS is the allow-list of {@link checkRpcParams} (none given:
   *   no worker is allowed).
   */
  constructor(
    @Inject(MODEL_STORE) private readonly store: ModelStore,
    @Optional() @Inject(DaemonConfig) private readonly config?: DaemonConfig,
  ) {}

  /**
   * The outbound-reach rule (docs/security.md "Outbound reach"): a model's `rpc` parameter may name only workers the
   * operator listed in LLAMAD_RPC_SERVERS. Checked when a model is created (Modelfile or JSON) and whenever a stored
   * model's parameters are read for use, so a model created before the rule (or copied in) cannot bypass it.
   * @throws InvalidRequestError RPC_NOT_ALLOWED_MESSAGE (one text whatever the address; nothing is contacted).
   */
  checkRpcParams(params: OptionMap | undefined): void {
    checkRpcAllowed(params?.rpc, this.config?.rpcServers ?? []);
  }

  /**
   * Resolves a model reference to its manifest, layers and GGUF facts. The name is parsed with defaults and matched
   * case-insensitively against the store.
   * @param input the name as the client sent it.
   * @param notFoundMessage builds the 404 text (default `model '<input>' not found`).
   * @throws InvalidRequestError `invalid model name`; ModelNotFoundError when no manifest matches, it has no
   *   weights layer, or the request's policy does not list the model (the same error: model-access.ts).
   */
  async resolve(input: string, notFoundMessage?: (name: ModelName) => string): Promise<ResolvedModel> {
    const name = ModelName.parse(input);
    if (!name) throw new InvalidRequestError('invalid model name', 'model');
    const message = notFoundMessage ? notFoundMessage(name) : ModelNotFoundError.notFoundMessage(input);
    // A model outside the caller's `models` list answers as one that does not exist (docs/security.md "Tenants").
    if (!isModelVisible(name)) throw new ModelNotFoundError(input, message);
    const stored = await this.store.readManifest(name);
    if (!stored) throw new ModelNotFoundError(input, message);
    return this.resolveStored(stored, () => new ModelNotFoundError(input, message));
  }

  /**
   * Resolves a manifest already read from the store.
   * @param notFound the error for a manifest without a weights layer.
   * @throws what `notFound` builds; InternalError when the weights cannot be read; InvalidRequestError when its `rpc`
   *   parameter names a worker outside LLAMAD_RPC_SERVERS ({@link checkRpcParams}).
   */
  async resolveStored(stored: StoredManifest, notFound: () => Error): Promise<ResolvedModel> {
    const { manifest } = stored;
    const modelLayer = manifest.layers.find((l) => l.mediaType === MediaType.MODEL);
    if (!modelLayer) throw notFound();
    const modelPath = this.store.blobPath(modelLayer.digest);
    const facts = await this.readFacts(modelLayer.digest, modelPath);
    const config = await this.readConfig(manifest.config, facts);

    let template: string | undefined;
    let system: string | undefined;
    let params: OptionMap = {};
    let messages: ModelfileMessage[] = [];
    const licenses: string[] = [];
    for (const layer of manifest.layers) {
      switch (layer.mediaType) {
        case MediaType.TEMPLATE:
        case MediaType.PROMPT:
          template = (await this.store.readBlob(layer.digest)).toString('utf8');
          break;
        case MediaType.SYSTEM:
          system = (await this.store.readBlob(layer.digest)).toString('utf8');
          break;
        case MediaType.LICENSE:
          licenses.push((await this.store.readBlob(layer.digest)).toString('utf8'));
          break;
        case MediaType.PARAMS:
          params = sanitizeStoredParams(await this.readJsonBlob(layer.digest));
          this.checkRpcParams(params);
          break;
        case MediaType.MESSAGES:
          messages = storedMessages(await this.readJsonBlob(layer.digest));
          break;
        default:
          break;
      }
    }
    const projectorLayers = manifest.layers.filter((l) => l.mediaType === MediaType.PROJECTOR);
    const projectorPaths = projectorLayers.map((l) => this.store.blobPath(l.digest));
    const projector = await this.readProjectors(projectorLayers);
    const adapterPaths = manifest.layers
      .filter((l) => l.mediaType === MediaType.ADAPTER)
      .map((l) => this.store.blobPath(l.digest));
    const draftLayer = manifest.layers.find((l) => l.mediaType === MediaType.DRAFT);
    return {
      name: stored.name,
      shortName: stored.name.toShortString(),
      manifest,
      manifestDigest: stored.digest,
      modifiedAt: stored.modifiedAt,
      size: storedSize(stored),
      modelDigest: modelLayer.digest,
      modelPath,
      projectorPaths,
      adapterPaths,
      ...(draftLayer ? { draftPath: this.store.blobPath(draftLayer.digest) } : {}),
      config,
      template,
      system,
      params,
      messages,
      licenses,
      facts,
      capabilities: deriveCapabilities(facts, template, projector),
    };
  }

  /** A JSON layer (params, messages, config); undefined (logged) when it is not valid JSON. */
  async readJsonBlob(digest: string): Promise<unknown> {
    try {
      return JSON.parse((await this.store.readBlob(digest)).toString('utf8')) as unknown;
    } catch (err) {
      this.logger.warn(`layer ${digest} is not valid JSON: ${(err as Error).message}`);
      return undefined;
    }
  }

  /**
   * The encoders of a model's projector layers together (each file's header read once per digest, asynchronously, and
   * cached: blobs never change); undefined without projector layers. A projector whose header cannot be read counts
   * as a vision projector (the rule before audio), with a warning: the load reports the real problem.
   */
  private async readProjectors(layers: ManifestLayer[]): Promise<ProjectorModalities | undefined> {
    if (layers.length === 0) return undefined;
    const all = await Promise.all(layers.map((l) => this.readProjector(l.digest)));
    return { vision: all.some((m) => m.vision), audio: all.some((m) => m.audio) };
  }

  private readProjector(digest: string): Promise<ProjectorModalities> {
    let pending = this.projectors.get(digest);
    if (!pending) {
      pending = readGguf(this.store.blobPath(digest), { maxArrayItems: FACTS_MAX_ARRAY_ITEMS }).then(
        (gguf) => projectorModalities(gguf.metadata),
        (err: unknown) => {
          this.projectors.delete(digest);
          this.logger.warn(`cannot read projector ${digest}: ${describeIoError(err)}; assuming a vision projector`);
          return { vision: true, audio: false };
        },
      );
      this.projectors.set(digest, pending);
    }
    return pending;
  }

  private readFacts(digest: string, path: string): Promise<ModelFacts> {
    let pending = this.facts.get(digest);
    if (!pending) {
      pending = readGguf(path, { maxArrayItems: FACTS_MAX_ARRAY_ITEMS }).then((gguf) => ({
        ...modelDetails(gguf),
        vision: Object.keys(gguf.metadata).some((k) => k.startsWith('clip.') || /^[^.]+\.vision\./.test(k)),
      }));
      this.facts.set(digest, pending);
      pending.catch(() => this.facts.delete(digest));
    }
    return pending.catch((err: unknown) => {
      throw new InternalError(`cannot read model weights ${digest}: ${describeIoError(err)}`, { cause: err });
    });
  }

  /** Reads a config blob; a missing or broken one is rebuilt from the GGUF facts (stores written by other tools). */
  private readConfig(layer: ManifestLayer, facts: ModelFacts): Promise<ModelConfig> {
    let pending = this.configs.get(layer.digest);
    if (!pending) {
      pending = this.readJsonBlob(layer.digest).then((raw) => {
        const fallback = ggufModelConfig(facts);
        if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return fallback;
        return { ...fallback, ...(raw as Partial<ModelConfig>) };
      });
      this.configs.set(layer.digest, pending);
    }
    return pending;
  }
}

/** The MESSAGE layer's JSON as messages: entries without a string role are dropped, a missing content is ''. */
function storedMessages(raw: unknown): ModelfileMessage[] {
  if (!Array.isArray(raw)) return [];
  return raw
    .filter((m): m is { role: string; content?: unknown } => !!m && typeof (m as { role?: unknown }).role === 'string')
    .map((m) => ({
      role: m.role as ModelfileMessage['role'],
      content: typeof m.content === 'string' ? m.content : '',
    }));
}
