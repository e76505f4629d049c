// Ollama `api.CreateRequest` (api/types.go) plus the spec's `modelfile` field — wire names kept exactly.
// Spec: seed §4 "POST /api/create"; details: reference/ollama-api.md §3.9 (the spec's form wins).
import { ApiSchema } from '@nestjs/swagger';
import {
  GoAny,
  GoBool,
  GoMap,
  GoNestedArray,
  GoString,
  GoStringOrStringArray,
  STREAM_FIELD,
} from '../../../common/validation';

const S = 'CreateRequest';

/** One baked-in message of the JSON form (`messages`). */
@ApiSchema({ name: 'CreateMessage' })
export class CreateMessageDto {
  @GoString('Message') role?: string;
  @GoString('Message') content?: string;
}

/** Body of POST /api/create: the spec's `{model, modelfile, stream}` or current Ollama's JSON fields. */
@ApiSchema({ name: 'CreateRequest' })
export class CreateRequestDto {
  static readonly goTypeName = 'api.CreateRequest';

  @GoString(S) model?: string;
  /** Deprecated alias of `model`. */
  @GoString(S, { deprecated: true }) name?: string;
  /** Raw Modelfile text (the spec's form); when present the JSON fields below are ignored. */
  @GoString(S, { description: 'Modelfile text; when present the JSON fields below are ignored.' })
  modelfile?: string;
  @GoBool(S, STREAM_FIELD) stream?: boolean;
  @GoString(S) from?: string;
  /** File name → `sha256:<hex>` of blobs in the store. */
  @GoMap(S, { description: 'File name → `sha256:<hex>` of an uploaded blob.' }) files?: Record<string, unknown>;
  /** Adapter file name → `sha256:<hex>` of an uploaded LoRA GGUF blob (at most one). */
  @GoMap(S, { description: 'Adapter file name → `sha256:<hex>` of an uploaded LoRA GGUF blob.' })
  adapters?: Record<string, unknown>;
  @GoString(S) template?: string;
  @GoStringOrStringArray(S) license?: string | string[];
  @GoString(S) system?: string;
  @GoMap(S) parameters?: Record<string, unknown>;
  @GoNestedArray(S, '[]api.Message', () => CreateMessageDto) messages?: CreateMessageDto[];
  /** Quantization target, case-insensitive (`q4_K_M`, `Q8_0`, …); also accepted with `modelfile`. */
  @GoString(S, { description: 'Quantization target (`q4_K_M`, `Q8_0`, …), case-insensitive.' }) quantize?: string;
  /** Speculative-decoding draft model: file name → `sha256:<hex>` of an uploaded GGUF blob (one file). */
  @GoMap(S, {
    description:
      'Draft model for speculative decoding (Modelfile `DRAFT`): file name → `sha256:<hex>` of an uploaded GGUF blob. ' +
      'Stored as an `application/vnd.ollama.image.draft` layer; not used for decoding yet.',
  })
  draft_files?: Record<string, unknown>;
  /** Quantization target of the draft model (needs a draft), case-insensitive. */
  @GoString(S, { description: 'Quantization target of the draft model (`q4_K_M`, `Q8_0`, …); needs a draft.' })
  draft_quantize?: string;
  /** Deprecated alias of `quantize`. */
  @GoAny({ type: 'string', deprecated: true }) quantization?: unknown;
}
