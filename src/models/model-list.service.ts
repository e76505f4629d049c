import { Inject, Injectable } from '@nestjs/common';
import { MediaType, ModelConfig } from './manifest';
import { isModelVisible } from './model-access';
import { configDetails, EMPTY_DETAILS, ModelResolverService, storedSize } from './model-resolver.service';
import { MODEL_STORE, ModelStore, StoredManifest } from './model-store';
import { ModelCapability, ModelDetails } from './model.types';

/** A model as listed by /api/tags. */
export interface ListedModel {
  /** Shortest display name (`name:tag`). */
  name: string;
  modifiedAt: Date;
  /** Bytes: layers + config. */
  size: number;
  /** Hex sha256 of the manifest bytes. */
  digest: string;
  details: ModelDetails;
  /** What the model can do (§8.7); absent when its weights cannot be read. */
  capabilities?: ModelCapability[];
  /** Digest (`sha256:<hex>`) of its weights layer; absent when it has none. Models with the same one share a runner. */
  weightsDigest?: string;
  /** Digests of its ADAPTER (LoRA) layers, in order; empty when it has none. */
  adapterDigests?: string[];
}

/** The weights and adapter layer digests of a manifest (ListedModel.weightsDigest, adapterDigests). */
function layerDigests(m: StoredManifest): Pick<ListedModel, 'weightsDigest' | 'adapterDigests'> {
  const weights = m.manifest.layers.find((l) => l.mediaType === MediaType.MODEL);
  return {
    ...(weights ? { weightsDigest: weights.digest } : {}),
    adapterDigests: m.manifest.layers.filter((l) => l.mediaType === MediaType.ADAPTER).map((l) => l.digest),
  };
}

/** The local models as lists show them: /api/tags (and /v1/models), and /api/ps's name for loaded weights. */
@Injectable()
export class ModelListService {
  constructor(
    @Inject(MODEL_STORE) private readonly store: ModelStore,
    private readonly resolver: ModelResolverService,
  ) {}

  /**
   * Every local model for /api/tags (§3.6), newest first. Manifests whose config cannot be read still appear, with
   * the details that could be found. Only the models the request's policy lists (model-access.ts).
   */
  async list(): Promise<ListedModel[]> {
    const manifests = (await this.store.listManifests()).filter((m) => isModelVisible(m.name));
    const out: ListedModel[] = [];
    for (const m of manifests) {
      let details: ModelDetails = { ...EMPTY_DETAILS };
      const raw = await this.resolver.readJsonBlob(m.manifest.config.digest).catch(() => undefined);
      if (raw && typeof raw === 'object' && !Array.isArray(raw)) details = configDetails(raw as ModelConfig);
      const capabilities = await this.resolver
        .resolveStored(m, () => new Error('no weights'))
        .then(
          (r) => r.capabilities,
          () => undefined,
        );
      out.push({
        name: m.name.toShortString(),
        modifiedAt: m.modifiedAt,
        size: storedSize(m),
        digest: m.digest,
        details,
        capabilities,
        ...layerDigests(m),
      });
    }
    out.sort((a, b) => b.modifiedAt.getTime() - a.modifiedAt.getTime());
    return out;
  }

  /**
   * The model /api/ps shows for a loaded weights blob (§3.7): the most recently modified manifest whose weights
   * layer is that blob, with its name, manifest digest and details; null when no manifest uses it any more (or none
   * the request's policy lists). One runner serves every model over its weights, adapters included (a `FROM base` +
   * `ADAPTER x` model runs on the base's runner; beyond Ollama), so a manifest without ADAPTER layers (the base model,
   * what the runner holds) is preferred; only when every such manifest has adapters is the newest of them shown.
   */
  async findByWeights(modelPath: string): Promise<ListedModel | null> {
    let best: StoredManifest | undefined;
    const rank = (m: StoredManifest) => (m.manifest.layers.some((l) => l.mediaType === MediaType.ADAPTER) ? 0 : 1);
    for (const m of await this.store.listManifests()) {
      const layer = m.manifest.layers.find((l) => l.mediaType === MediaType.MODEL);
      if (!layer || this.store.blobPath(layer.digest) !== modelPath || !isModelVisible(m.name)) continue;
      if (!best || rank(m) > rank(best) || (rank(m) === rank(best) && m.modifiedAt > best.modifiedAt)) best = m;
    }
    if (!best) return null;
    const resolved = await this.resolver.resolveStored(best, () => new Error('no weights')).catch(() => undefined);
    return {
      name: best.name.toShortString(),
      modifiedAt: best.modifiedAt,
      size: storedSize(best),
      digest: best.digest,
      details: resolved ? configDetails(resolved.config) : { ...EMPTY_DETAILS },
      capabilities: resolved?.capabilities,
      ...layerDigests(best),
    };
  }
}
