import { Inject, Injectable, Logger } from '@nestjs/common';
import { defer, Observable } from 'rxjs';
import { decodeOptions, OptionMap } from '../common/options';
import { modelDetails } from './gguf';
import {
  buildManifest,
  buildModelConfig,
  ggufModelConfig,
  goJsonEncode,
  ManifestLayer,
  manifestDigestsOf,
  MediaType,
  ModelConfig,
  withDraftConfig,
} from './manifest';
import { ModelCreateQuantizer } from './model-create.quantizer';
import { CreateAdapter, CreateEmit, CreatePlan, CreateProgress } from './model-create.types';
import { BlobPin, MODEL_STORE, ModelStore, StoredBlob } from './model-store';
import { storeError } from './store-errors';
import { detectBundledTemplate } from './template-support';

/**
 * The second half of /api/create: runs a plan from ModelCreatePlanner — weights (copied or quantized), adapter,
 * projectors, the template/system/params/messages/license layers, the config and finally the manifest.
 */
@Injectable()
export class ModelCreateExecutor {
  private readonly logger = new Logger(ModelCreateExecutor.name);

  constructor(
    @Inject(MODEL_STORE) private readonly store: ModelStore,
    private readonly quantizer: ModelCreateQuantizer,
  ) {}

  /**
   * Runs a validated create: copies (or quantizes) the weights into the blob store (streamed and hashed), stores the
   * adapter, writes the template,
   * system, params, messages and license layers, the config blob and finally the manifest (atomically). Emits the
   * spec's progress records in order: `parsing modelfile`, `looking for base model <from>`, `copying layers`,
   * `setting system instructions`, `success` (the controller adds `done`). Cold: nothing happens until subscribed.
   *
   * Concurrency: every blob the new manifest will reference is pinned from the start (the base's, uploaded ones)
   * or as it is written, so a concurrent delete or copy of this process never prunes it; the manifest is committed
   * under the store lock after checking that each blob still exists (ModelStore.commitManifest), and the
   * replaced manifest's unused layers are pruned there. The lock is not held while copying or quantizing.
   * Errors: MissingLayerError (500, nothing written) when another process removed a blob meanwhile; file-system
   * failures as InternalError without server paths.
   */
  create(plan: CreatePlan): Observable<CreateProgress> {
    return new Observable<CreateProgress>((sub) => {
      let cancelled = false;
      const emit: CreateEmit = (record) => {
        if (!cancelled) sub.next(typeof record === 'string' ? { status: record } : record);
      };
      const run = async () => {
        const pin = this.store.pin(planDigests(plan));
        try {
          emit('parsing modelfile');
          emit(`looking for base model ${plan.baseLabel}`);
          emit('copying layers');
          const base = await this.baseLayers(plan, emit, pin);
          const { layers } = base;
          let { config } = base;
          if (plan.adapter) await this.applyAdapter(plan.adapter, layers, pin);
          if (plan.draft) config = await this.applyDraft(plan, layers, config, emit, pin);
          if (plan.projectors) await this.applyProjectors(plan.projectors, layers, pin);
          emit('setting system instructions');
          await this.applyOverrides(this.withAutodetectedTemplate(plan), layers, pin);
          const configBlob = await this.store.writeBlob(goJsonEncode(config), pin);
          const manifest = buildManifest({ mediaType: MediaType.CONFIG, ...configBlob }, layers);
          const { replaced, pruned } = await this.store.commitManifest(plan.name, manifest);
          if (replaced && pruned.length > 0) {
            this.logger.log(`pruned ${pruned.length} unused blob(s) of ${replaced.name.toShortString()}`);
          }
          this.logger.log(`created model ${plan.name.toShortString()}`);
          emit('success');
        } finally {
          await pin.release();
        }
      };
      defer(run).subscribe({
        complete: () => sub.complete(),
        error: (err: unknown) => sub.error(storeError(err, 'cannot create model')),
      });
      return () => {
        // A create is not cancelled by a client going away: the copy finishes and the manifest is written, as in
        // Ollama. Only the progress records stop.
        cancelled = true;
      };
    });
  }

  /**
   * Create-time template autodetection (§8.3): a model created from GGUF weights without a TEMPLATE gets the bundled
   * Go template whose Jinja twin matches the GGUF's tokenizer.chat_template, and that template's parameters (stop
   * tokens) under the Modelfile's own PARAMETERs. Logged as `using autodetected template <name>`; the spec's
   * progress records are unchanged.
   */
  private withAutodetectedTemplate(plan: CreatePlan): CreatePlan {
    if (plan.base.kind === 'model' || plan.template !== undefined) return plan;
    const jinja = plan.base.gguf.metadata['tokenizer.chat_template'];
    if (typeof jinja !== 'string' || jinja === '') return plan;
    const detected = detectBundledTemplate(jinja);
    if (!detected) return plan;
    let params: OptionMap = {};
    try {
      params = decodeOptions(detected.parameters);
    } catch (err) {
      this.logger.warn(`template ${detected.name}: ignoring its parameters: ${(err as Error).message}`);
    }
    this.logger.log(`using autodetected template ${detected.name}`);
    return { ...plan, template: detected.template, parameters: { ...params, ...plan.parameters } };
  }

  /**
   * The weights layer (plus inherited layers for a model base) and the config to write. With `quantize`, the source
   * weights go through the quantizer into a new blob; the unquantized source is not stored. The quantizer emits
   * Ollama's `quantizing <from> model to <to>` and `verifying conversion` records for the JSON form only.
   */
  private async baseLayers(
    plan: CreatePlan,
    emit: CreateEmit,
    pin: BlobPin,
  ): Promise<{ layers: ManifestLayer[]; config: ModelConfig }> {
    const { base } = plan;
    const overrides = { renderer: plan.renderer, parser: plan.parser, requires: plan.requires };
    if (base.kind === 'model') {
      const from = base.model.shortName;
      // Like Ollama's parseFromModel: every inherited layer names its immediate source model.
      const layers: ManifestLayer[] = base.model.manifest.layers.map((l) => ({ ...l, from }));
      const config: ModelConfig = { ...base.model.config };
      for (const [k, v] of Object.entries(overrides)) if (v) config[k] = v;
      if (plan.quantize) {
        const { blob, fileType } = await this.quantizer.quantizeInto(base.model.modelPath, plan, emit, pin);
        const at = layers.findIndex((l) => l.mediaType === MediaType.MODEL);
        layers[at] = { mediaType: MediaType.MODEL, ...blob };
        config.file_type = fileType;
      }
      return { layers, config: buildModelConfigFrom(config) };
    }
    const sourcePath = base.kind === 'file' ? base.path : this.store.blobPath(base.digest);
    let blob: StoredBlob;
    let fileType = modelDetails(base.gguf).fileType;
    if (plan.quantize) {
      ({ blob, fileType } = await this.quantizer.quantizeInto(sourcePath, plan, emit, pin));
    } else {
      blob =
        base.kind === 'file' ? await this.store.importFile(base.path, pin) : { digest: base.digest, size: base.size };
    }
    const details = { ...modelDetails(base.gguf), fileType };
    const config = ggufModelConfig(details, overrides);
    return { layers: [{ mediaType: MediaType.MODEL, ...blob }], config };
  }

  /** Stores the adapter blob (a file is imported; an uploaded blob is used as is) and replaces inherited adapters. */
  private async applyAdapter(adapter: CreateAdapter, layers: ManifestLayer[], pin: BlobPin): Promise<void> {
    const blob =
      adapter.kind === 'file'
        ? await this.store.importFile(adapter.path, pin)
        : { digest: adapter.digest, size: adapter.size };
    for (let i = layers.length - 1; i >= 0; i--) if (layers[i].mediaType === MediaType.ADAPTER) layers.splice(i, 1);
    const at = layers.findIndex((l) => l.mediaType === MediaType.MODEL);
    layers.splice(at + 1, 0, { mediaType: MediaType.ADAPTER, ...blob });
  }

  /**
   * Stores the draft model (`application/vnd.ollama.image.draft`; imported, an uploaded blob used as is, or quantized
   * with `draft_quantize` through the same quantizer and progress records as the weights) after the model and adapter
   * layers, as Ollama's create appends draft layers after adapters; replaces an inherited draft. Sets the config's
   * `draft` object (`{model_format: "gguf", architecture}`, server/create.go). Mutates `layers`.
   * @returns `config` with its `draft` object.
   */
  private async applyDraft(
    plan: CreatePlan,
    layers: ManifestLayer[],
    config: ModelConfig,
    emit: CreateEmit,
    pin: BlobPin,
  ): Promise<ModelConfig> {
    const draft = plan.draft!;
    const { source } = draft;
    let blob: StoredBlob;
    if (draft.quantize) {
      const path = source.kind === 'file' ? source.path : this.store.blobPath(source.digest);
      ({ blob } = await this.quantizer.quantizeInto(path, plan, emit, pin, draft.quantize, `draft ${draft.label}`));
    } else {
      blob =
        source.kind === 'file'
          ? await this.store.importFile(source.path, pin)
          : { digest: source.digest, size: source.size };
    }
    for (let i = layers.length - 1; i >= 0; i--) if (layers[i].mediaType === MediaType.DRAFT) layers.splice(i, 1);
    let at = layers.findIndex((l) => l.mediaType === MediaType.MODEL);
    while (at + 1 < layers.length && layers[at + 1].mediaType === MediaType.ADAPTER) at++;
    layers.splice(at + 1, 0, { mediaType: MediaType.DRAFT, ...blob });
    const architecture = modelDetails(draft.gguf).architecture;
    return withDraftConfig(config, { model_format: 'gguf', ...(architecture ? { architecture } : {}) });
  }

  /** Stores the projector blobs after the model layer (`application/vnd.ollama.image.projector`), replacing inherited ones. */
  private async applyProjectors(projectors: CreateAdapter[], layers: ManifestLayer[], pin: BlobPin): Promise<void> {
    for (let i = layers.length - 1; i >= 0; i--) if (layers[i].mediaType === MediaType.PROJECTOR) layers.splice(i, 1);
    let at = layers.findIndex((l) => l.mediaType === MediaType.MODEL);
    for (const p of projectors) {
      const blob = p.kind === 'file' ? await this.store.importFile(p.path, pin) : { digest: p.digest, size: p.size };
      layers.splice(++at, 0, { mediaType: MediaType.PROJECTOR, ...blob });
    }
  }

  /** Replaces (or, for params, merges into) the layers the request sets. Mutates `layers`. */
  private async applyOverrides(plan: CreatePlan, layers: ManifestLayer[], pin: BlobPin): Promise<void> {
    const replace = async (mediaTypes: string[], contents: string[]) => {
      const at = layers.findIndex((l) => mediaTypes.includes(l.mediaType));
      for (let i = layers.length - 1; i >= 0; i--) if (mediaTypes.includes(layers[i].mediaType)) layers.splice(i, 1);
      const fresh: ManifestLayer[] = [];
      for (const content of contents) {
        fresh.push({ mediaType: mediaTypes[0], ...(await this.store.writeBlob(content, pin)) });
      }
      layers.splice(at >= 0 ? at : layers.length, 0, ...fresh);
    };
    if (plan.template !== undefined) await replace([MediaType.TEMPLATE, MediaType.PROMPT], [plan.template]);
    if (plan.system !== undefined) await replace([MediaType.SYSTEM], [plan.system]);
    if (plan.licenses !== undefined) await replace([MediaType.LICENSE], plan.licenses);
    if (plan.parameters !== undefined && Object.keys(plan.parameters).length > 0) {
      const inherited = plan.base.kind === 'model' ? plan.base.model.params : {};
      const merged: OptionMap = { ...inherited, ...plan.parameters };
      const sorted: OptionMap = {};
      for (const key of Object.keys(merged).sort()) sorted[key] = merged[key];
      await replace([MediaType.PARAMS], [goJsonEncode(sorted)]);
    }
    if (plan.messages !== undefined) {
      const messages = plan.messages.map((m) => ({ role: m.role, content: m.content }));
      await replace([MediaType.MESSAGES], [goJsonEncode(messages)]);
    }
  }
}

/** Re-orders an inherited config into Go field order (known fields first, extras kept before architecture/os). */
function buildModelConfigFrom(config: ModelConfig): ModelConfig {
  const { model_format, model_family, model_families, model_type, file_type, renderer, parser, requires } = config;
  const { architecture, os, ...rest } = config;
  const base = buildModelConfig({
    format: model_format,
    family: model_family,
    families: model_families ?? [],
    modelType: model_type,
    fileType: file_type,
    renderer,
    parser,
    requires,
  });
  const { architecture: _arch, os: _os, ...head } = base;
  const extras: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(rest)) if (!(k in head)) extras[k] = v;
  return { ...head, ...extras, architecture: architecture ?? 'amd64', os: os ?? 'linux' };
}

/** Digests a create's plan references before anything is written: the base model's blobs and uploaded blobs. */
function planDigests(plan: CreatePlan): string[] {
  const out: string[] = [];
  if (plan.base.kind === 'model') out.push(...manifestDigestsOf(plan.base.model.manifest));
  if (plan.base.kind === 'blob') out.push(plan.base.digest);
  for (const a of [plan.adapter, ...(plan.projectors ?? [])]) if (a?.kind === 'blob') out.push(a.digest);
  if (plan.draft?.source.kind === 'blob') out.push(plan.draft.source.digest);
  return out;
}
