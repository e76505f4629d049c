// Ollama `api.GenerateRequest` (api/types.go) — wire names kept exactly; fields in upstream order.
// Spec: seed §4 "POST /api/generate"; details: reference/ollama-api.md §3.2.
import { ApiSchema } from '@nestjs/swagger';
import {
  FORMAT_FIELD,
  GoAny,
  GoBool,
  GoInt,
  GoIntArray,
  GoMap,
  GoString,
  GoStringArray,
  KEEP_ALIVE_FIELD,
  MODEL_FIELD,
  OPTIONS_FIELD,
  STREAM_FIELD,
  THINK_FIELD,
} from '../../../common/validation';
import { LoraField, LoraRequestDto } from './lora-request.dto';

const S = 'GenerateRequest';

/** Body of POST /api/generate. Unknown fields are dropped, as Go's decoder ignores them. */
@ApiSchema({ name: 'GenerateRequest' })
export class GenerateRequestDto {
  /** Go type named in "cannot unmarshal … into Go value of type …" errors. */
  static readonly goTypeName = 'api.GenerateRequest';

  @GoString(S, MODEL_FIELD) model?: string;
  @GoString(S) prompt?: string;
  @GoString(S) suffix?: string;
  @GoString(S) system?: string;
  @GoString(S) template?: string;
  @GoIntArray(S, { description: 'Deprecated: token ids returned by a previous answer.' }) context?: number[];
  @GoBool(S, STREAM_FIELD) stream?: boolean;
  @GoBool(S, { description: 'No prompt template: the prompt is sent as is.' }) raw?: boolean;
  /** `"json"` or a JSON schema object: grammar-enforced (validated by decodeFormat, §9). */
  @GoAny(FORMAT_FIELD) format?: unknown;
  /** Seconds (number) or a Go duration string. */
  @GoAny(KEEP_ALIVE_FIELD) keep_alive?: unknown;
  @GoStringArray(S, { description: 'Base64-encoded images (vision models).' }) images?: string[];
  @GoStringArray(S, { description: 'Base64-encoded audio files: WAV, MP3 or FLAC (audio models; beyond Ollama).' })
  audio?: string[];
  @GoMap(S, OPTIONS_FIELD) options?: Record<string, unknown>;
  /** true/false or "low" | "medium" | "high" | "max". */
  @GoAny(THINK_FIELD) think?: unknown;
  @GoBool(S) truncate?: boolean;
  @GoBool(S, {
    description:
      'Context shift (default true): when num_ctx fills during generation, drop older tokens after the first num_keep and go on; false ends with done_reason "length".',
  })
  shift?: boolean;
  @GoBool(S) logprobs?: boolean;
  @GoInt(S) top_logprobs?: number;
  /** Beyond Ollama: LoRA adapters of this request (llama-server's `lora`), see LoraField. */
  @LoraField() lora?: LoraRequestDto[];
}
