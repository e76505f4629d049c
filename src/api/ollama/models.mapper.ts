import { InvalidRequestError } from '../../common/errors';
import { decodeOptions, OptionMap } from '../../common/options';
import { CreateRequestDto } from './dto/create-request.dto';
import { ListModelWire, ProgressWire, ShowResponseWire } from './dto/model-responses.dto';
import { ModelfileMessage } from '../../models/modelfile.parser';
import { formatShowParameters, renderModelfile } from '../../models/modelfile.renderer';
import { CreateModelCommand, CreateProgress, ListedModel, ModelInfo, ModelsService } from '../../models/models.service';

/** Wire ↔ domain mapping of the model routes (create, tags, show). */

const MESSAGE_ROLES = new Set(['system', 'user', 'assistant']);

/**
 * CreateRequestDto → CreateModelCommand (reference/ollama-api.md §3.9). `name` is accepted for `model`, `quantization`
 * for `quantize`; `files`, `adapters` and `draft_files` values must be non-empty strings (their format is checked by the service).
 * @throws InvalidRequestError bad message roles, non-string digests (`invalid digest format`), a non-string
 *   `quantization`.
 */
export function fromCreateRequest(dto: CreateRequestDto): CreateModelCommand {
  const digests = (map: Record<string, unknown> | undefined, field: string): Record<string, string> | undefined => {
    if (!map) return undefined;
    const out: Record<string, string> = {};
    for (const [name, digest] of Object.entries(map)) {
      if (typeof digest !== 'string' || digest === '') throw new InvalidRequestError('invalid digest format', field);
      out[name] = digest;
    }
    return out;
  };
  const files = digests(dto.files, 'files');
  const adapters = digests(dto.adapters, 'adapters');
  const draftFiles = digests(dto.draft_files, 'draft_files');
  if (dto.quantization !== undefined && dto.quantization !== null && typeof dto.quantization !== 'string') {
    throw new InvalidRequestError('quantization must be a string', 'quantize');
  }
  const quantize = dto.quantize || (typeof dto.quantization === 'string' ? dto.quantization : '') || undefined;
  let messages: ModelfileMessage[] | undefined;
  if (dto.messages) {
    messages = dto.messages.map((m) => {
      const role = (m.role ?? '').toLowerCase();
      if (!MESSAGE_ROLES.has(role)) {
        throw new InvalidRequestError('message role must be one of "system", "user", or "assistant"', 'messages');
      }
      return { role: role as ModelfileMessage['role'], content: m.content ?? '' };
    });
  }
  return {
    model: dto.model || dto.name || '',
    modelfile: dto.modelfile,
    from: dto.from,
    files,
    template: dto.template,
    system: dto.system,
    parameters: dto.parameters,
    messages,
    license: dto.license,
    adapters,
    quantize,
    draftFiles,
    draftQuantize: dto.draft_quantize || undefined,
  };
}

/** A progress record on the wire: `done` is true only on `success` (spec §2). */
export function toProgressWire(progress: CreateProgress): ProgressWire {
  return { ...progress, done: progress.status === 'success' };
}

/** One /api/tags entry (§3.6): `name` and `model` both the shortest display name, UTC `modified_at`, capabilities. */
export function toListModelWire(model: ListedModel): ListModelWire {
  return {
    name: model.name,
    model: model.name,
    modified_at: model.modifiedAt.toISOString(),
    size: model.size,
    digest: model.digest,
    details: model.details,
    ...(model.capabilities ? { capabilities: model.capabilities } : {}),
  };
}

/**
 * The /api/show response (§3.8). `system` and `options` of the request override the model's SYSTEM and are merged
 * into its parameters, as Ollama does. `template` is the Modelfile TEMPLATE, else the GGUF chat template (the
 * template actually used).
 * @throws InvalidRequestError for ill-typed `options`.
 */
export function toShowResponseWire(
  info: ModelInfo,
  overrides: { system?: string; options?: Record<string, unknown> },
): ShowResponseWire {
  const { model } = info;
  const params: OptionMap = { ...model.params, ...decodeOptions(overrides.options) };
  const system = overrides.system || model.system;
  const template = model.template ?? model.facts.chatTemplate;
  const parameters = formatShowParameters(params);
  const response: ShowResponseWire = {
    ...(model.licenses.length > 0 ? { license: model.licenses.join('\n') } : {}),
    modelfile: renderModelfile({
      shortName: model.shortName,
      modelPath: model.modelPath,
      adapterPaths: model.adapterPaths,
      draftPath: model.draftPath,
      projectorPaths: model.projectorPaths,
      template: model.template,
      system,
      params,
      licenses: model.licenses,
      messages: model.messages,
    }),
    ...(parameters ? { parameters } : {}),
    ...(template ? { template } : {}),
    ...(system ? { system } : {}),
    details: ModelsService.details(model.config),
    ...(model.messages.length > 0
      ? { messages: model.messages.map((m) => ({ role: m.role, content: m.content })) }
      : {}),
    model_info: info.modelInfo,
    ...(info.tensors.length > 0 ? { tensors: info.tensors } : {}),
    capabilities: model.capabilities,
    modified_at: model.modifiedAt.toISOString(),
  };
  return response;
}
