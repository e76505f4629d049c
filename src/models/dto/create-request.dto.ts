// Ollama `api.CreateRequest` (api/types.go) plus the spec's `modelfile` field — wire names kept exactly.
// Spec: seed §4 "POST /api/create"; details: reference/ollama-api.md §3.9 (the spec's form wins).
import { GoAny, GoBool, GoMap, GoNestedArray, GoString, GoStringOrStringArray } from '../../common/validation';

const S = 'CreateRequest';

/** One baked-in message of the JSON form (`messages`). */
export class CreateMessageDto {
  @GoString('Message') role?: string;
  @GoString('Message') content?: string;
}

/** Body of POST /api/create: the spec's `{model, modelfile, stream}` or current Ollama's JSON fields. */
export class CreateRequestDto {
  static readonly goTypeName = 'api.CreateRequest';

  @GoString(S) model?: string;
  /** Deprecated alias of `model`. */
  @GoString(S) name?: string;
  /** Raw Modelfile text (the spec's form); when present the JSON fields below are ignored. */
  @GoString(S) modelfile?: string;
  @GoBool(S) stream?: boolean;
  @GoString(S) from?: string;
  /** File name → `sha256:<hex>` of blobs in the store. */
  @GoMap(S) files?: Record<string, unknown>;
  /** Adapter file name → `sha256:<hex>` of an uploaded LoRA GGUF blob (at most one). */
  @GoMap(S) adapters?: Record<string, unknown>;
  @GoString(S) template?: string;
  @GoStringOrStringArray(S) license?: string | string[];
  @GoString(S) system?: string;
  @GoMap(S) parameters?: Record<string, unknown>;
  @GoNestedArray(S, '[]api.Message', () => CreateMessageDto) messages?: CreateMessageDto[];
  /** Quantization target, case-insensitive (`q4_K_M`, `Q8_0`, …); also accepted with `modelfile`. */
  @GoString(S) quantize?: string;
  /** Deprecated alias of `quantize`. */
  @GoAny() quantization?: unknown;
}
