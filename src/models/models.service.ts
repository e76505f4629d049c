import { Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, resolve as resolvePath } from 'node:path';
import type { Readable } from 'node:stream';
import { defer, Observable, Subject } from 'rxjs';
import type { NativeBinding, NativeQuantType } from '../../binding';
import { DaemonError, InternalError, InvalidRequestError, ModelNotFoundError } from '../common/errors';
import { decodeOptions, formatParams, OptionMap, sanitizeStoredParams } from '../common/options';
import { mapNativeError, NATIVE_BINDING, NativeBindingLoader } from '../native';
import {
  blobReference,
  checkGoTemplate,
  checkQuantizableSource,
  estimateQuantizedSize,
  parseQuantizeType,
  QUANTIZE_PROGRESS_DIGEST,
  quantizeCompleted,
  requireDigest,
} from './create-support';
import { formatParameterCount, GgufFile, GgufFormatError, isGgufFile, modelDetails, readGguf } from './gguf';
import { buildManifest, buildModelConfig, goJsonEncode, ManifestLayer, MediaType, ModelConfig } from './manifest';
import { ModelName } from './model-name';
import { BlobPin, manifestDigestsOf, ModelStoreRepository, StoredManifest } from './model-store.repository';
import { ModelCapability, ModelDetails, ModelFacts, ResolvedModel } from './model.types';
import { ModelfileMessage, parseModelfile } from './modelfile.parser';
import { describeIoError, redactPaths, storeError } from './store-errors';
import { detectBundledTemplate, goTemplateCapabilities, jinjaTemplateCapabilities } from './template-support';

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
}

/** What /api/show returns besides the resolved model. */
export interface ModelInfo {
  model: ResolvedModel;
  /** GGUF key/values except general.name and tokenizer.chat_template; long arrays emptied unless verbose. */
  modelInfo: Record<string, unknown>;
  tensors: Array<{ name: string; type: string; shape: number[] }>;
}

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

/** The base a new model is built on. */
type CreateBase =
  | { kind: 'file'; path: string; gguf: GgufFile }
  | { kind: 'blob'; digest: string; size: number; gguf: GgufFile }
  | { kind: 'model'; model: ResolvedModel };

/** A LoRA adapter to store as an `application/vnd.ollama.image.adapter` layer. */
type CreateAdapter = { kind: 'file'; path: string } | { kind: 'blob'; digest: string; size: number };

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

/** How often the quantization output file is polled for progress records, ms. */
const QUANTIZE_POLL_MS = 250;

/** Ollama's message for a FROM file that is not GGUF (reference/ollama-api.md §5.2). */
export const NOT_GGUF_MESSAGE = 'supplied file was not in GGUF format';

/** Temporary files in blobs/ older than this are interrupted writes, deleted at startup (§7.7). */
export const STALE_TEMP_AGE_MS = 60 * 60 * 1000;

/**
 * A FROM value that names a file rather than a model: absolute (POSIX or a Windows drive), explicitly relative,
 * home-relative, `.`/`..`/`~`, containing a backslash, or *.gguf.
 */
function looksLikePath(from: string): boolean {
  return (
    isAbsolute(from) ||
    from === '.' ||
    from === '..' ||
    from === '~' ||
    from.startsWith('./') ||
    from.startsWith('../') ||
    from.startsWith('~/') ||
    from.includes('\\') ||
    /^[A-Za-z]:[\\/]/.test(from) ||
    /\.gguf$/i.test(from)
  );
}

function expandHome(p: string): string {
  return p === '~' || p.startsWith('~/') ? homedir() + p.slice(1) : p;
}

/**
 * Capabilities from GGUF facts, templates and layers (reference/ollama-api.md §8.7), in Ollama's order:
 * `completion` or `embedding` (GGUF `pooling_type`, or a bert-family architecture), `vision` (GGUF vision keys or a
 * projector layer), `tools`, `insert`, `thinking`. Tools/insert/thinking come from the Go template layer when the
 * model has one, else from the GGUF Jinja chat template (no insert); embedding models get none of them.
 * @param goTemplate the TEMPLATE layer text, if any.
 */
export function deriveCapabilities(
  facts: ModelFacts,
  goTemplate: string | undefined,
  hasProjector: boolean,
): ModelCapability[] {
  const caps: ModelCapability[] = [];
  const embedding = facts.poolingType !== undefined || /bert/i.test(facts.architecture);
  caps.push(embedding ? 'embedding' : 'completion');
  if (facts.vision || hasProjector) caps.push('vision');
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

/** A model removed by delete (for listeners that must let go of it, e.g. the scheduler). */
export interface DeletedModel {
  /** Shortest display name of the deleted manifest. */
  name: string;
  /** Absolute path of its weights blob (whether or not the blob itself was removed). */
  modelPath: string;
}

/** Converts a GGUF metadata value to JSON (bigints → numbers). */
function toJsonValue(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(toJsonValue);
  return v;
}

/**
 * The model catalogue: name resolution, /api/tags, /api/show and /api/create over the on-disk store
 * (ARCHITECTURE.md §4 ModelsModule). Exported to InferenceModule through `resolve()`.
 */
@Injectable()
export class ModelsService implements OnModuleInit {
  private readonly logger = new Logger(ModelsService.name);
  /** GGUF facts per weights digest; blobs are immutable, so entries never go stale. */
  private readonly facts = new Map<string, Promise<ModelFacts>>();
  /** Parsed config per config digest. */
  private readonly configs = new Map<string, Promise<ModelConfig>>();

  private readonly deletions = new Subject<DeletedModel>();
  /** Emits after each successful delete (the scheduler unloads the weights: reference/ollama-api.md §3.12). */
  readonly deleted$: Observable<DeletedModel> = this.deletions.asObservable();

  constructor(
    private readonly store: ModelStoreRepository,
    @Optional() @Inject(NATIVE_BINDING) private readonly loadBinding?: NativeBindingLoader,
  ) {}

  /**
   * Startup hygiene (Ollama's Serve, reference/ollama-api.md §7.7): removes interrupted temporary files older than
   * STALE_TEMP_AGE_MS from blobs/, then, under the store lock, blobs no manifest references that are older than
   * STALE_TEMP_AGE_MS too (younger ones may belong to another daemon's create or pull, or a fresh upload). Nothing
   * is swept when a manifest cannot be read; `partial/` downloads are never touched. Failures are logged, never
   * fatal.
   */
  async onModuleInit(): Promise<void> {
    const removed = await this.store.removeStaleTempFiles(STALE_TEMP_AGE_MS).catch((err: unknown) => {
      this.logger.warn(`cannot clean blobs/: ${describeIoError(err)}`);
      return [];
    });
    if (removed.length > 0) this.logger.log(`removed ${removed.length} stale temporary file(s) from blobs/`);
    const swept = await this.store.sweepOrphans(STALE_TEMP_AGE_MS).catch((err: unknown) => {
      this.logger.warn(`cannot sweep orphaned blobs: ${(err as Error).message}`);
      return null;
    });
    if (swept?.skipped) this.logger.warn('orphaned blobs not swept: some manifest cannot be read');
    if (swept && swept.count > 0) {
      this.logger.log(`swept ${swept.count} orphaned blob(s) (${swept.bytes} bytes) from blobs/`);
    }
  }

  /**
   * HEAD /api/blobs/:digest (§3.10).
   * @throws InvalidRequestError `invalid digest format`; ModelNotFoundError (404) `blob "sha256:…" not found`.
   */
  async checkBlob(digest: string): Promise<void> {
    const d = requireDigest(digest);
    if ((await this.store.blobSize(d)) === null) throw new ModelNotFoundError(d, `blob "${d}" not found`);
  }

  /**
   * POST /api/blobs/:digest (§3.10): streams `body` into the store, verified against the digest. When the blob
   * already exists the body is drained and discarded.
   * @returns true when the blob was created (201), false when it already existed (200).
   * @throws InvalidRequestError `invalid digest format`; DigestMismatchError (400, temp file removed).
   */
  async receiveBlob(digest: string, body: Readable): Promise<boolean> {
    const d = requireDigest(digest);
    if ((await this.store.blobSize(d)) !== null) {
      body.resume();
      return false;
    }
    const { created } = await this.store.receiveBlob(body, d);
    return created;
  }

  /**
   * POST /api/copy (§3.11): copies the source manifest to the destination name; blobs are shared. An existing
   * destination is replaced (its layers that nothing else uses are pruned). Source is looked up case-insensitively.
   * The copy and the prune form one critical section of the store lock (§3.11).
   * @throws InvalidRequestError `source "<x>" is invalid` / `destination "<x>" is invalid` (checked before anything
   *   is touched); ModelNotFoundError `model "<source>" not found`.
   */
  async copy(source: string, destination: string): Promise<void> {
    const src = ModelName.parse(source);
    if (!src) throw new InvalidRequestError(`source ${goQuote(source)} is invalid`, 'source');
    const dst = ModelName.parse(destination);
    if (!dst) throw new InvalidRequestError(`destination ${goQuote(destination)} is invalid`, 'destination');
    const stored = await this.store.readManifest(src);
    if (!stored) throw new ModelNotFoundError(source, `model ${goQuote(source)} not found`);
    const existing = await this.store.findExisting(dst);
    if (existing?.equalsIgnoreCase(stored.name)) return;
    const copied = await this.store.exclusive(async () => {
      const result = await this.store.copyManifest(stored, dst);
      if (result?.replaced) await this.pruneReplaced(result.replaced);
      return result;
    });
    if (!copied) throw new ModelNotFoundError(source, `model ${goQuote(source)} not found`); // deleted meanwhile
    this.logger.log(`copied ${stored.name.toShortString()} to ${dst.toShortString()}`);
  }

  /**
   * DELETE /api/delete (§3.12): removes the manifest (name matched case-insensitively), prunes empty manifest
   * directories, then deletes its blobs that no other manifest references (shared ones stay) and that no in-flight
   * create or pull has pinned. Reading, removing and pruning form one critical section of the store lock.
   * Emits on `deleted$`.
   * @throws InvalidRequestError `model is required` / `name "<x>" is invalid`; ModelNotFoundError
   *   `model '<x>' not found`; InternalError for an unreadable manifest (nothing is removed then);
   *   ServerBusyError (503) when another process holds the store lock too long.
   */
  async delete(input: string): Promise<void> {
    if (!input) throw new InvalidRequestError('model is required', 'model');
    const name = ModelName.parse(input);
    if (!name) throw new InvalidRequestError(`name ${goQuote(input)} is invalid`, 'model');
    const stored = await this.store.exclusive(async () => {
      const found = await this.store.readManifest(name);
      if (!found) return null;
      await this.store.removeManifest(found);
      await this.store.pruneLayers(manifestDigestsOf(found.manifest));
      return found;
    });
    if (!stored) throw new ModelNotFoundError(input, ModelNotFoundError.notFoundMessage(input));
    this.logger.log(`deleted ${stored.name.toShortString()}`);
    const weights = stored.manifest.layers.find((l) => l.mediaType === MediaType.MODEL);
    if (weights) {
      this.deletions.next({ name: stored.name.toShortString(), modelPath: this.store.blobPath(weights.digest) });
    }
  }

  /**
   * The model /api/ps shows for a loaded weights blob (§3.7): the most recently modified manifest whose weights
   * layer is that blob, with its name, manifest digest and details; null when no manifest uses it any more.
   */
  async findByWeights(modelPath: string): Promise<ListedModel | null> {
    let best: StoredManifest | undefined;
    for (const m of await this.store.listManifests()) {
      const layer = m.manifest.layers.find((l) => l.mediaType === MediaType.MODEL);
      if (!layer || this.store.blobPath(layer.digest) !== modelPath) continue;
      if (!best || m.modifiedAt > best.modifiedAt) best = m;
    }
    if (!best) return null;
    const resolved = await this.resolveStored(best, () => new Error('no weights')).catch(() => undefined);
    const size = best.manifest.layers.reduce((sum, l) => sum + (l.size ?? 0), best.manifest.config.size ?? 0);
    return {
      name: best.name.toShortString(),
      modifiedAt: best.modifiedAt,
      size,
      digest: best.digest,
      details: resolved
        ? ModelsService.details(resolved.config)
        : { parent_model: '', format: '', family: '', families: null, parameter_size: '', quantization_level: '' },
      capabilities: resolved?.capabilities,
    };
  }

  /** Deletes the layers of a manifest that was just replaced, unless another manifest still uses them. */
  private async pruneReplaced(old: StoredManifest): Promise<void> {
    const removed = await this.store.pruneLayers(manifestDigestsOf(old.manifest));
    this.logPruned(removed, old);
  }

  private logPruned(removed: string[], old: StoredManifest): void {
    if (removed.length > 0) this.logger.log(`pruned ${removed.length} unused blob(s) of ${old.name.toShortString()}`);
  }

  /**
   * Resolves a model reference to its manifest, layers and GGUF facts. The name is parsed with defaults and matched
   * case-insensitively against the store.
   * @param input the name as the client sent it.
   * @param notFoundMessage builds the 404 text (default `model '<input>' not found`).
   * @throws InvalidRequestError `invalid model name`; ModelNotFoundError when no manifest matches or it has no
   *   weights layer.
   */
  async resolve(input: string, notFoundMessage?: (name: ModelName) => string): Promise<ResolvedModel> {
    const name = ModelName.parse(input);
    if (!name) throw new InvalidRequestError('invalid model name', 'model');
    const stored = await this.store.readManifest(name);
    const message = notFoundMessage ? notFoundMessage(name) : ModelNotFoundError.notFoundMessage(input);
    if (!stored) throw new ModelNotFoundError(input, message);
    return this.resolveStored(stored, () => new ModelNotFoundError(input, message));
  }

  private async resolveStored(stored: StoredManifest, notFound: () => Error): Promise<ResolvedModel> {
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
          break;
        case MediaType.MESSAGES: {
          const raw = await this.readJsonBlob(layer.digest);
          messages = Array.isArray(raw)
            ? raw
                .filter((m): m is { role: string; content?: unknown } => !!m && typeof m.role === 'string')
                .map((m) => ({
                  role: m.role as ModelfileMessage['role'],
                  content: typeof m.content === 'string' ? m.content : '',
                }))
            : [];
          break;
        }
        default:
          break;
      }
    }
    const projectorPaths = manifest.layers
      .filter((l) => l.mediaType === MediaType.PROJECTOR)
      .map((l) => this.store.blobPath(l.digest));
    const adapterPaths = manifest.layers
      .filter((l) => l.mediaType === MediaType.ADAPTER)
      .map((l) => this.store.blobPath(l.digest));
    const size = manifest.layers.reduce((sum, l) => sum + (l.size ?? 0), manifest.config.size ?? 0);
    return {
      name: stored.name,
      shortName: stored.name.toShortString(),
      manifest,
      manifestDigest: stored.digest,
      modifiedAt: stored.modifiedAt,
      size,
      modelDigest: modelLayer.digest,
      modelPath,
      projectorPaths,
      adapterPaths,
      config,
      template,
      system,
      params,
      messages,
      licenses,
      facts,
      capabilities: deriveCapabilities(facts, template, projectorPaths.length > 0),
    };
  }

  private async readJsonBlob(digest: string): Promise<unknown> {
    try {
      return JSON.parse((await this.store.readBlob(digest)).toString('utf8')) as unknown;
    } catch (err) {
      this.logger.warn(`layer ${digest} is not valid JSON: ${(err as Error).message}`);
      return undefined;
    }
  }

  private readFacts(digest: string, path: string): Promise<ModelFacts> {
    let pending = this.facts.get(digest);
    if (!pending) {
      pending = readGguf(path).then((gguf) => ({
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
        const fallback = buildModelConfig({
          format: 'gguf',
          family: facts.architecture,
          families: [facts.architecture],
          modelType: formatParameterCount(facts.parameterCount),
          fileType: facts.fileType,
        });
        if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return fallback;
        return { ...fallback, ...(raw as Partial<ModelConfig>) };
      });
      this.configs.set(layer.digest, pending);
    }
    return pending;
  }

  /** `details` of tags/show from a config (§3.6): parent_model is always empty for local GGUF models. */
  static details(config: ModelConfig): ModelDetails {
    return {
      parent_model: '',
      format: config.model_format ?? '',
      family: config.model_family ?? '',
      families: config.model_families ?? null,
      parameter_size: config.model_type ?? '',
      quantization_level: config.file_type ?? '',
    };
  }

  /**
   * Every local model for /api/tags (§3.6), newest first. Manifests whose config cannot be read still appear, with
   * the details that could be found.
   */
  async list(): Promise<ListedModel[]> {
    const manifests = await this.store.listManifests();
    const out: ListedModel[] = [];
    for (const m of manifests) {
      const size = m.manifest.layers.reduce((sum, l) => sum + (l.size ?? 0), m.manifest.config.size ?? 0);
      let details: ModelDetails = {
        parent_model: '',
        format: '',
        family: '',
        families: null,
        parameter_size: '',
        quantization_level: '',
      };
      const raw = await this.readJsonBlob(m.manifest.config.digest).catch(() => undefined);
      if (raw && typeof raw === 'object' && !Array.isArray(raw)) details = ModelsService.details(raw as ModelConfig);
      const capabilities = await this.resolveStored(m, () => new Error('no weights')).then(
        (r) => r.capabilities,
        () => undefined,
      );
      out.push({
        name: m.name.toShortString(),
        modifiedAt: m.modifiedAt,
        size,
        digest: m.digest,
        details,
        capabilities,
      });
    }
    out.sort((a, b) => b.modifiedAt.getTime() - a.modifiedAt.getTime());
    return out;
  }

  /**
   * Everything /api/show returns (§3.8).
   * @throws InvalidRequestError `model is required` / `invalid model name`; ModelNotFoundError
   *   `model '<short normalized name>' not found`.
   */
  async show(model: string, verbose: boolean): Promise<ModelInfo> {
    if (!model) throw new InvalidRequestError('model is required', 'model');
    const resolved = await this.resolve(model, (name) => ModelNotFoundError.notFoundMessage(name.toShortString()));
    const gguf = await readGguf(resolved.modelPath).catch((err: unknown) => {
      throw new InternalError(`cannot read model weights: ${describeIoError(err)}`, { cause: err });
    });
    const modelInfo: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(gguf.metadata)) {
      if (key === 'general.name' || key === 'tokenizer.chat_template') continue;
      modelInfo[key] = Array.isArray(value) && value.length > 5 && !verbose ? [] : toJsonValue(value);
    }
    const tensors = gguf.tensors.map((t) => ({ name: t.name, type: t.typeName, shape: [...t.shape] }));
    return { model: resolved, modelInfo, tensors };
  }

  /**
   * Validates a create request and finds its base, before any progress is streamed, so that every client mistake
   * is a plain 4xx response (reference/ollama-api.md §3.9, §5.2).
   * @throws InvalidRequestError: `model is required`, `invalid model name`, Modelfile grammar errors naming the line,
   *   `neither 'from' or 'files' was specified`, `invalid digest format`, `blob "sha256:…" not found`,
   *   `supplied file was not in GGUF format`, a missing FROM/ADAPTER file, `only one adapter is currently supported`,
   *   `template error: …`, `quantization is only supported for F16, BF16 and F32 models`,
   *   `unsupported quantization type X - supported types are …`, unsupported commands (DRAFT, an extra FROM that
   *   is not a clip projector), bad parameters. FROM / `from` / `files` may be a local GGUF, an existing model or an
   *   uploaded blob (`@sha256:…`, `sha256:…`); `quantize` works with either form.
   *   For a requester that is not local, a FROM / ADAPTER value that would name a server file gets
   *   SERVER_PATH_REFUSED_MESSAGE without the path being looked at, and other FROM values are model names only.
   * @throws ModelNotFoundError when FROM names a model that is not in the store.
   * @param requester who asks (LOCAL_REQUESTER for in-process callers; the controller passes the client's).
   */
  async prepareCreate(cmd: CreateModelCommand, requester: CreateRequester = LOCAL_REQUESTER): Promise<CreatePlan> {
    const local = requester.local;
    if (!cmd.model) throw new InvalidRequestError('model is required', 'model');
    const name = ModelName.parse(cmd.model);
    if (!name) throw new InvalidRequestError('invalid model name', 'model');

    let from: string;
    let files: Record<string, string> | undefined;
    let adapter: string | undefined;
    const plan: Omit<CreatePlan, 'base' | 'baseLabel'> = {
      name,
      form: cmd.modelfile !== undefined ? 'modelfile' : 'json',
    };
    if (cmd.modelfile !== undefined) {
      const file = parseModelfile(cmd.modelfile);
      if (file.adapters.length > 1) throw new InvalidRequestError('only one adapter is currently supported');
      adapter = file.adapters[0];
      if (file.draft !== undefined) throw new InvalidRequestError('DRAFT is not supported yet');
      if (file.extraFrom.length > 0) {
        plan.projectors = [];
        for (const extra of file.extraFrom) plan.projectors.push(await this.resolveProjector(extra, local));
      }
      from = file.from;
      plan.template = file.template;
      plan.system = file.system;
      if (file.parameters.size > 0) {
        const { params, deprecated } = formatParams(file.parameters);
        for (const d of deprecated) this.logger.warn(`parameter ${d} is deprecated and ignored`);
        plan.parameters = params;
      }
      if (file.messages.length > 0) plan.messages = file.messages;
      if (file.licenses.length > 0) plan.licenses = file.licenses;
      plan.renderer = file.renderer;
      plan.parser = file.parser;
      plan.requires = file.requires;
    } else {
      from = cmd.from ?? '';
      files = cmd.files && Object.keys(cmd.files).length > 0 ? cmd.files : undefined;
      if (!from && !files) throw new InvalidRequestError("neither 'from' or 'files' was specified");
      plan.template = cmd.template;
      plan.system = cmd.system;
      if (cmd.parameters) plan.parameters = decodeOptions(cmd.parameters);
      if (cmd.messages) plan.messages = cmd.messages;
      if (cmd.license !== undefined) plan.licenses = Array.isArray(cmd.license) ? cmd.license : [cmd.license];
      const adapters = Object.values(cmd.adapters ?? {});
      if (adapters.length > 1) throw new InvalidRequestError('only one adapter is currently supported');
      if (adapters.length === 1) adapter = blobReference(adapters[0]) ?? requireDigest(adapters[0], 'adapters');
    }
    if (plan.template !== undefined) checkGoTemplate(plan.template);
    if (adapter !== undefined) plan.adapter = await this.resolveAdapter(adapter, local);
    const quantizeType = cmd.quantize ? parseQuantizeType(cmd.quantize) : undefined;

    if (files) {
      const entries = Object.entries(files);
      if (entries.length !== 1) throw new InvalidRequestError('only one model file is supported');
      const [fileName, digest] = entries[0];
      const base = await this.blobBase(requireDigest(digest, 'files'));
      return this.withQuantize({ ...plan, baseLabel: fileName, base }, quantizeType);
    }
    return this.withQuantize({ ...plan, baseLabel: from, base: await this.resolveBase(from, local) }, quantizeType);
  }

  /** Adds the quantization step after checking the source's file type and that the addon can be loaded. */
  private withQuantize(plan: CreatePlan, type: NativeQuantType | undefined): CreatePlan {
    if (!type) return plan;
    const from = plan.base.kind === 'model' ? plan.base.model.facts.fileType : modelDetails(plan.base.gguf).fileType;
    checkQuantizableSource(from);
    this.nativeBinding(); // fail before any progress is streamed when the addon cannot be loaded
    return { ...plan, quantize: { type, from: from.toUpperCase() } };
  }

  /** An uploaded blob as a GGUF base. @throws InvalidRequestError `blob "sha256:…" not found`, not GGUF. */
  private async blobBase(digest: string): Promise<CreateBase> {
    const size = await this.store.blobSize(digest);
    if (size === null) throw new InvalidRequestError(`blob "${digest}" not found`);
    const gguf = await this.readCreateGguf(this.store.blobPath(digest), `blob "${digest}"`);
    return { kind: 'blob', digest, size, gguf };
  }

  /**
   * ADAPTER / `adapters`: an uploaded blob (`@sha256:…`, `sha256:…`) or, for a local requester, a file on the server;
   * either must be GGUF (LoRA GGUFs only; safetensors adapters are not converted).
   * @param local whether the requester may name server files (else anything but a blob is refused unlooked-at).
   * @throws InvalidRequestError blob not found, file missing, `supplied file was not in GGUF format`,
   *   SERVER_PATH_REFUSED_MESSAGE.
   */
  private async resolveAdapter(value: string, local: boolean): Promise<CreateAdapter> {
    const digest = blobReference(value);
    if (digest) {
      const size = await this.store.blobSize(digest);
      if (size === null) throw new InvalidRequestError(`blob "${digest}" not found`);
      await this.readCreateGguf(this.store.blobPath(digest), `blob "${digest}"`);
      return { kind: 'blob', digest, size };
    }
    if (!local) throw new InvalidRequestError(SERVER_PATH_REFUSED_MESSAGE);
    const path = resolvePath(expandHome(value));
    const info = await stat(path).catch(() => null);
    if (!info?.isFile()) throw new InvalidRequestError(`ADAPTER file "${value}" does not exist`);
    await this.readCreateGguf(path, `"${value}"`);
    return { kind: 'file', path };
  }

  /**
   * Reads a GGUF that is to become a model layer; any failure is the client's (400).
   * @param label how the client named it (`"./x.gguf"`, `blob "sha256:…"`): error texts never show the resolved path.
   */
  private async readCreateGguf(path: string, label: string): Promise<GgufFile> {
    if (!(await isGgufFile(path))) throw new InvalidRequestError(NOT_GGUF_MESSAGE);
    try {
      return await readGguf(path);
    } catch (err) {
      if (err instanceof GgufFormatError) throw new InvalidRequestError(`${NOT_GGUF_MESSAGE}: ${err.detail}`);
      throw new InvalidRequestError(`cannot read ${label}: ${describeIoError(err)}`);
    }
  }

  /**
   * FROM: an uploaded blob; for a local requester a GGUF path (when it exists or looks like a path); else an
   * existing local model. A non-local requester's path-like value is refused before any file-system access.
   * @throws InvalidRequestError (see prepareCreate); ModelNotFoundError for an unknown model name.
   */
  private async resolveBase(from: string, local: boolean): Promise<CreateBase> {
    const digest = blobReference(from);
    if (digest) return this.blobBase(digest);
    if (!local) {
      if (looksLikePath(from)) throw new InvalidRequestError(SERVER_PATH_REFUSED_MESSAGE);
      return this.modelBase(from, `invalid FROM: "${from}" is not a model name`);
    }
    const path = resolvePath(expandHome(from));
    const info = await stat(path).catch(() => null);
    if (info?.isDirectory()) {
      throw new InvalidRequestError(`FROM "${from}" is a directory: only GGUF files are supported (no safetensors)`);
    }
    if (info?.isFile()) return { kind: 'file', path, gguf: await this.readCreateGguf(path, `"${from}"`) };
    if (looksLikePath(from)) throw new InvalidRequestError(`FROM file "${from}" does not exist`);
    return this.modelBase(from, `invalid FROM: "${from}" is neither a file nor a model name`);
  }

  /** FROM as a local model name. @throws InvalidRequestError `invalidMessage`; ModelNotFoundError. */
  private async modelBase(from: string, invalidMessage: string): Promise<CreateBase> {
    if (!ModelName.parse(from)) throw new InvalidRequestError(invalidMessage);
    const model = await this.resolve(from, (n) => ModelNotFoundError.notFoundMessage(n.toShortString()));
    return { kind: 'model', model };
  }

  /**
   * Runs a validated create: copies (or quantizes) the weights into the blob store (streamed and hashed), stores the
   * adapter, writes the template,
   * system, params, messages and license layers, the config blob and finally the manifest (atomically). Emits the
   * spec's progress records in order: `parsing modelfile`, `looking for base model <from>`, `copying layers`,
   * `setting system instructions`, `success` (the controller adds `done`). Cold: nothing happens until subscribed.
   *
   * Concurrency: every blob the new manifest will reference is pinned from the start (the base's, uploaded ones)
   * or as it is written, so a concurrent delete or copy of this process never prunes it; the manifest is committed
   * under the store lock after checking that each blob still exists (ModelStoreRepository.commitManifest), and the
   * replaced manifest's unused layers are pruned there. The lock is not held while copying or quantizing.
   * Errors: MissingLayerError (500, nothing written) when another process removed a blob meanwhile; file-system
   * failures as InternalError without server paths.
   */
  create(plan: CreatePlan): Observable<CreateProgress> {
    return new Observable<CreateProgress>((sub) => {
      let cancelled = false;
      const emit = (record: string | CreateProgress) => {
        if (!cancelled) sub.next(typeof record === 'string' ? { status: record } : record);
      };
      const run = async () => {
        const pin = this.store.pin(planDigests(plan));
        try {
          emit('parsing modelfile');
          emit(`looking for base model ${plan.baseLabel}`);
          emit('copying layers');
          const { layers, config } = await this.baseLayers(plan, emit, pin);
          if (plan.adapter) await this.applyAdapter(plan.adapter, layers, pin);
          if (plan.projectors) await this.applyProjectors(plan.projectors, layers, pin);
          emit('setting system instructions');
          await this.applyOverrides(this.withAutodetectedTemplate(plan), layers, pin);
          const configBlob = await this.store.writeBlob(goJsonEncode(config), pin);
          const manifest = buildManifest({ mediaType: MediaType.CONFIG, ...configBlob }, layers);
          const { replaced, pruned } = await this.store.commitManifest(plan.name, manifest);
          if (replaced) this.logPruned(pruned, replaced);
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
   * weights go through `binding.quantize` (a native worker thread) into a temporary file in blobs/, which is then
   * hashed and renamed; the unquantized source is not stored. Emits Ollama's `quantizing <from> model to <to>` and
   * `verifying conversion` records for the JSON form only.
   */
  private async baseLayers(
    plan: CreatePlan,
    emit: (record: string | CreateProgress) => void,
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
        const { blob, fileType } = await this.quantizeInto(base.model.modelPath, plan, emit, pin);
        const at = layers.findIndex((l) => l.mediaType === MediaType.MODEL);
        layers[at] = { mediaType: MediaType.MODEL, ...blob };
        config.file_type = fileType;
      }
      return { layers, config: buildModelConfigFrom(config) };
    }
    const sourcePath = base.kind === 'file' ? base.path : this.store.blobPath(base.digest);
    let blob: { digest: string; size: number };
    let fileType = modelDetails(base.gguf).fileType;
    if (plan.quantize) {
      ({ blob, fileType } = await this.quantizeInto(sourcePath, plan, emit, pin));
    } else {
      blob =
        base.kind === 'file' ? await this.store.importFile(base.path, pin) : { digest: base.digest, size: base.size };
    }
    const details = { ...modelDetails(base.gguf), fileType };
    const config = buildModelConfig({
      format: 'gguf',
      family: details.architecture,
      families: [details.architecture],
      modelType: formatParameterCount(details.parameterCount),
      fileType: details.fileType,
      ...overrides,
    });
    return { layers: [{ mediaType: MediaType.MODEL, ...blob }], config };
  }

  /**
   * Quantizes `sourcePath` to `plan.quantize.type` into a new blob (temp file in blobs/ → hashed → renamed; the
   * temp file is removed on failure) and reads back its file type. For the JSON form it streams Ollama's progress
   * records `{status: "quantizing <from> model to <to>", digest: "0000000000000000000", total, completed}` (bytes:
   * total = the source size, completed = total × output size so far / estimated output size, polled every
   * QUANTIZE_POLL_MS since llama_model_quantize has no progress callback): one with completed 0 first, changed
   * values while it runs, and one with completed = total when it finished.
   * @throws InternalError when the addon cannot be loaded or llama.cpp fails (LLAMA_QUANTIZE_FAILED).
   */
  private async quantizeInto(
    sourcePath: string,
    plan: CreatePlan,
    emit: (record: string | CreateProgress) => void,
    pin: BlobPin,
  ): Promise<{ blob: { digest: string; size: number }; fileType: string }> {
    const q = plan.quantize!;
    const status = `quantizing ${q.from} model to ${q.type}`;
    const binding = this.nativeBinding();
    const tmp = await this.store.newTempBlobPath();
    const total = plan.form === 'json' ? await this.sourceSize(sourcePath) : 0;
    const expected = estimateQuantizedSize(total, q.from, q.type);
    const progress = (completed: number) => emit({ status, digest: QUANTIZE_PROGRESS_DIGEST, total, completed });
    let last = 0;
    let timer: NodeJS.Timeout | undefined;
    if (plan.form === 'json') {
      progress(0);
      timer = setInterval(() => {
        stat(tmp).then(
          (info) => {
            const completed = quantizeCompleted(info.size, expected, total);
            if (timer === undefined || completed <= last) return;
            last = completed;
            progress(completed);
          },
          () => undefined, // not created yet
        );
      }, QUANTIZE_POLL_MS);
    }
    try {
      await binding.quantize(sourcePath, tmp, { type: q.type });
    } catch (err) {
      await rm(tmp, { force: true });
      throw withoutPaths(err instanceof DaemonError ? err : mapNativeError(err));
    } finally {
      clearInterval(timer);
      timer = undefined;
    }
    if (plan.form === 'json') progress(total);
    if (plan.form === 'json') emit('verifying conversion');
    let fileType: string;
    try {
      fileType = modelDetails(await readGguf(tmp)).fileType;
    } catch (err) {
      await rm(tmp, { force: true });
      throw new InternalError(`quantized model cannot be read: ${describeIoError(err)}`, { cause: err });
    }
    const blob = await this.store.adoptTempFile(tmp, pin);
    this.logger.log(`quantized ${plan.baseLabel} to ${q.type} (${blob.digest})`);
    return { blob, fileType };
  }

  /**
   * Size of a quantization source, bytes.
   * @throws InternalError `cannot read the model to quantize: <errno text>` (no path).
   */
  private async sourceSize(path: string): Promise<number> {
    try {
      return (await stat(path)).size;
    } catch (err) {
      throw new InternalError(`cannot read the model to quantize: ${describeIoError(err)}`, { cause: err });
    }
  }

  /**
   * The addon, for quantization.
   * @throws InternalError (500) `quantization needs the native addon: <loader's reason>`.
   */
  private nativeBinding(): NativeBinding {
    try {
      if (!this.loadBinding) throw new Error('no native binding configured');
      return this.loadBinding();
    } catch (err) {
      const reason = redactPaths((err as Error).message);
      throw new InternalError(`quantization needs the native addon: ${reason}`, { cause: err });
    }
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
   * A further Modelfile FROM: a vision projector GGUF (uploaded blob or local file) whose `general.architecture` is
   * "clip" (an mmproj file, loaded by the runner with the model).
   * @throws InvalidRequestError missing file/blob, not GGUF, or a GGUF that is not a projector.
   */
  private async resolveProjector(value: string, local: boolean): Promise<CreateAdapter> {
    const digest = blobReference(value);
    let path: string;
    let projector: CreateAdapter;
    let label: string;
    if (digest) {
      const size = await this.store.blobSize(digest);
      if (size === null) throw new InvalidRequestError(`blob "${digest}" not found`);
      path = this.store.blobPath(digest);
      projector = { kind: 'blob', digest, size };
      label = `blob "${digest}"`;
    } else {
      if (!local) throw new InvalidRequestError(SERVER_PATH_REFUSED_MESSAGE);
      label = `"${value}"`;
      path = resolvePath(expandHome(value));
      const info = await stat(path).catch(() => null);
      if (!info?.isFile()) throw new InvalidRequestError(`FROM file "${value}" does not exist`);
      projector = { kind: 'file', path };
    }
    const gguf = await this.readCreateGguf(path, label);
    if (gguf.metadata['general.architecture'] !== 'clip') {
      throw new InvalidRequestError(
        `only one FROM model is supported: "${value}" is not a vision projector (clip) GGUF`,
      );
    }
    return projector;
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
  return out;
}

/** A DaemonError whose message may quote native or file-system text, with absolute paths replaced by `<path>`. */
function withoutPaths(err: DaemonError): DaemonError {
  err.message = redactPaths(err.message);
  return err;
}

/** Go's %q for the strings in Ollama's copy/delete messages (JSON escaping is the same for printable text). */
function goQuote(s: string): string {
  return JSON.stringify(s);
}
