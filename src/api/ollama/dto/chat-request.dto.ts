// Ollama `api.ChatRequest` and `api.Message` (api/types.go) — wire names kept exactly; fields in upstream order.
// Spec: seed §2 "Chat message", §4 "POST /api/chat"; details: reference/ollama-api.md §3.3.
import { ApiSchema } from '@nestjs/swagger';
import {
  GoAny,
  GoBool,
  GoInt,
  GoMap,
  GoNestedArray,
  GoObjectArray,
  GoString,
  GoStringArray,
  FORMAT_FIELD,
  KEEP_ALIVE_FIELD,
  MODEL_FIELD,
  OPTIONS_FIELD,
  STREAM_FIELD,
  THINK_FIELD,
} from '../../../common/validation';
import { LoraField, LoraRequestDto } from './lora-request.dto';

const M = 'Message';
const S = 'ChatRequest';

/** One message of POST /api/chat. */
@ApiSchema({ name: 'Message' })
export class MessageDto {
  /** `system`, `user`, `assistant` or `tool` (lower-cased on decode, as Ollama does). */
  @GoString(M, { enum: ['system', 'user', 'assistant', 'tool'] }) role?: string;
  /** Message text; absent means "". */
  @GoString(M) content?: string;
  @GoString(M) thinking?: string;
  @GoStringArray(M, { description: 'Base64-encoded images (vision models).' }) images?: string[];
  @GoStringArray(M, { description: 'Base64-encoded audio files: WAV, MP3 or FLAC (audio models; beyond Ollama).' })
  audio?: string[];
  @GoObjectArray(M, '[]api.ToolCall') tool_calls?: Record<string, unknown>[];
  @GoString(M) tool_name?: string;
  @GoString(M) tool_call_id?: string;
}

/** Body of POST /api/chat. Unknown fields are dropped, as Go's decoder ignores them. */
@ApiSchema({ name: 'ChatRequest' })
export class ChatRequestDto {
  static readonly goTypeName = 'api.ChatRequest';

  @GoString(S, MODEL_FIELD) model?: string;
  @GoNestedArray(S, '[]api.Message', () => MessageDto) messages?: MessageDto[];
  @GoBool(S, STREAM_FIELD) stream?: boolean;
  /** `"json"` or a JSON schema object: grammar-enforced (validated by decodeFormat, §9). */
  @GoAny(FORMAT_FIELD) format?: unknown;
  @GoAny(KEEP_ALIVE_FIELD) keep_alive?: unknown;
  @GoObjectArray(S, 'api.Tools', { description: 'Function tools: `{type: "function", function: {name, …}}`.' })
  tools?: Record<string, unknown>[];
  @GoMap(S, OPTIONS_FIELD) options?: Record<string, unknown>;
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
