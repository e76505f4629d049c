// Ollama `api.GenerateRequest` (api/types.go) — wire names kept exactly; fields in upstream order.
// Spec: seed §4 "POST /api/generate"; details: reference/ollama-api.md §3.2.
import { GoAny, GoBool, GoInt, GoIntArray, GoMap, GoString, GoStringArray } from '../../common/validation';

const S = 'GenerateRequest';

/** Body of POST /api/generate. Unknown fields are dropped, as Go's decoder ignores them. */
export class GenerateRequestDto {
  /** Go type named in "cannot unmarshal … into Go value of type …" errors. */
  static readonly goTypeName = 'api.GenerateRequest';

  @GoString(S) model?: string;
  @GoString(S) prompt?: string;
  @GoString(S) suffix?: string;
  @GoString(S) system?: string;
  @GoString(S) template?: string;
  @GoIntArray(S) context?: number[];
  @GoBool(S) stream?: boolean;
  @GoBool(S) raw?: boolean;
  /** `"json"` or a JSON schema object: grammar-enforced (validated by decodeFormat, §9). */
  @GoAny() format?: unknown;
  /** Seconds (number) or a Go duration string. */
  @GoAny() keep_alive?: unknown;
  @GoStringArray(S) images?: string[];
  @GoMap(S) options?: Record<string, unknown>;
  /** true/false or "low" | "medium" | "high" | "max". */
  @GoAny() think?: unknown;
  @GoBool(S) truncate?: boolean;
  @GoBool(S) shift?: boolean;
  @GoBool(S) logprobs?: boolean;
  @GoInt(S) top_logprobs?: number;
}
