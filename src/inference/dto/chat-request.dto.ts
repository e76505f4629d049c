// Ollama `api.ChatRequest` and `api.Message` (api/types.go) — wire names kept exactly; fields in upstream order.
// Spec: seed §2 "Chat message", §4 "POST /api/chat"; details: reference/ollama-api.md §3.3.
import {
  GoAny,
  GoBool,
  GoInt,
  GoMap,
  GoNestedArray,
  GoObjectArray,
  GoString,
  GoStringArray,
} from '../../common/validation';

const M = 'Message';
const S = 'ChatRequest';

/** One message of POST /api/chat. */
export class MessageDto {
  /** `system`, `user`, `assistant` or `tool` (lower-cased on decode, as Ollama does). */
  @GoString(M) role?: string;
  /** Message text; absent means "". */
  @GoString(M) content?: string;
  @GoString(M) thinking?: string;
  @GoStringArray(M) images?: string[];
  @GoObjectArray(M, '[]api.ToolCall') tool_calls?: Record<string, unknown>[];
  @GoString(M) tool_name?: string;
  @GoString(M) tool_call_id?: string;
}

/** Body of POST /api/chat. Unknown fields are dropped, as Go's decoder ignores them. */
export class ChatRequestDto {
  static readonly goTypeName = 'api.ChatRequest';

  @GoString(S) model?: string;
  @GoNestedArray(S, '[]api.Message', () => MessageDto) messages?: MessageDto[];
  @GoBool(S) stream?: boolean;
  /** `"json"` or a JSON schema object: grammar-enforced (validated by decodeFormat, §9). */
  @GoAny() format?: unknown;
  @GoAny() keep_alive?: unknown;
  @GoObjectArray(S, 'api.Tools') tools?: Record<string, unknown>[];
  @GoMap(S) options?: Record<string, unknown>;
  @GoAny() think?: unknown;
  @GoBool(S) truncate?: boolean;
  @GoBool(S) shift?: boolean;
  @GoBool(S) logprobs?: boolean;
  @GoInt(S) top_logprobs?: number;
}
