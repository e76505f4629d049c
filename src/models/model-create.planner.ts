import { Inject, Injectable, Logger } from '@nestjs/common';
import { stat } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import type { NativeQuantType } from '../../binding';
import { InvalidRequestError, ModelNotFoundError } from '../common/errors';
import { decodeOptions, formatParams } from '../common/options';
import {
  blobReference,
  checkGoTemplate,
  checkQuantizableSource,
  expandHome,
  looksLikePath,
  parseQuantizeType,
  requireDigest,
} from './create-support';
import { FACTS_MAX_ARRAY_ITEMS, GgufFile, GgufFormatError, isGgufFile, modelDetails, readGguf } from './gguf';
import { DraftLookup, resolveDraftFiles, resolveDraftValue, withDraftQuantize } from './model-create.draft';
import { ModelCreateQuantizer } from './model-create.quantizer';
import {
  CreateAdapter,
  CreateBase,
  CreateDraft,
  CreateModelCommand,
  CreatePlan,
  CreateRequester,
  LOCAL_REQUESTER,
  NOT_GGUF_MESSAGE,
  SERVER_PATH_REFUSED_MESSAGE,
} from './model-create.types';
import { ModelName } from './model-name';
import { ModelResolverService } from './model-resolver.service';
import { MODEL_STORE, ModelStore } from './model-store';
import { parseModelfile } from './modelfile.parser';
import { describeIoError } from './store-errors';

/**
 * The first half of /api/create: validates a request and finds its base, before any progress is streamed, so that
 * every client mistake is a plain 4xx response (reference/ollama-api.md §3.9, §5.2). ModelCreateExecutor runs the
 * plan it returns.
 */
@Injectable()
export class ModelCreatePlanner {
  private readonly logger = new Logger(ModelCreatePlanner.name);

  constructor(
    @Inject(MODEL_STORE) private readonly store: ModelStore,
    private readonly resolver: ModelResolverService,
    private readonly quantizer: ModelCreateQuantizer,
  ) {}

  /**
   * Validates a create request and finds its base.
   * @throws InvalidRequestError: `model is required`, `invalid model name`, Modelfile grammar errors naming the line,
   *   `neither 'from' or 'files' was specified`, `invalid digest format`, `blob "sha256:…" not found`,
   *   `supplied file was not in GGUF format`, a missing FROM/ADAPTER file, `only one adapter is currently supported`,
   *   `template error: …`, `quantization is only supported for F16, BF16 and F32 models`,
   *   `unsupported quantization type X - supported types are …`, an extra FROM that is not a clip projector, bad
   *   parameters, draft errors (model-create.draft.ts: `--draft-quantize requires a DRAFT model`, `draft
   *   quantization requires an unquantized draft model, got X`, a missing DRAFT file or blob). FROM / `from` /
   *   `files` may be a local GGUF, an existing model or an uploaded blob (`@sha256:…`, `sha256:…`); `quantize` works
   *   with either form. DRAFT / `draft_files` / `draft_quantize`: see model-create.draft.ts.
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
    let draft: CreateDraft | undefined;
    const plan: Omit<CreatePlan, 'base' | 'baseLabel'> = {
      name,
      form: cmd.modelfile !== undefined ? 'modelfile' : 'json',
    };
    if (cmd.modelfile !== undefined) {
      const file = parseModelfile(cmd.modelfile);
      if (file.adapters.length > 1) throw new InvalidRequestError('only one adapter is currently supported');
      adapter = file.adapters[0];
      if (file.draft !== undefined) draft = await resolveDraftValue(file.draft, local, this.draftLookup());
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
      draft = await resolveDraftFiles(cmd.draftFiles, this.draftLookup());
    }
    draft = withDraftQuantize(draft, cmd.draftQuantize);
    if (draft) {
      plan.draft = draft;
      if (draft.quantize) this.quantizer.nativeBinding(); // fail before any progress when the addon cannot load
    }
    if (plan.template !== undefined) await checkGoTemplate(plan.template);
    this.resolver.checkRpcParams(plan.parameters);
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

  /** What the draft checks (model-create.draft.ts) need from this planner. */
  private draftLookup(): DraftLookup {
    return { store: this.store, resolver: this.resolver, readCreateGguf: (p, l) => this.readCreateGguf(p, l) };
  }

  /** Adds the quantization step after checking the source's file type and that the addon can be loaded. */
  private withQuantize(plan: CreatePlan, type: NativeQuantType | undefined): CreatePlan {
    if (!type) return plan;
    const from = plan.base.kind === 'model' ? plan.base.model.facts.fileType : modelDetails(plan.base.gguf).fileType;
    checkQuantizableSource(from);
    this.quantizer.nativeBinding(); // fail before any progress is streamed when the addon cannot be loaded
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

  /**
   * Reads a GGUF that is to become a model layer; any failure is the client's (400).
   * @param label how the client named it (`"./x.gguf"`, `blob "sha256:…"`): error texts never show the resolved path.
   */
  private async readCreateGguf(path: string, label: string): Promise<GgufFile> {
    if (!(await isGgufFile(path))) throw new InvalidRequestError(NOT_GGUF_MESSAGE);
    try {
      return await readGguf(path, { maxArrayItems: FACTS_MAX_ARRAY_ITEMS });
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
    const model = await this.resolver.resolve(from, (n) => ModelNotFoundError.notFoundMessage(n.toShortString()));
    return { kind: 'model', model };
  }
}
