// Ollama `api.ShowRequest` (api/types.go) — wire names kept exactly.
// Spec: seed §4 "POST /api/show"; details: reference/ollama-api.md §3.8.
import { GoBool, GoMap, GoString } from '../../common/validation';

const S = 'ShowRequest';

/** Body of POST /api/show. */
export class ShowRequestDto {
  static readonly goTypeName = 'api.ShowRequest';

  @GoString(S) model?: string;
  /** Deprecated alias of `model`. */
  @GoString(S) name?: string;
  /** Overrides SYSTEM in the output. */
  @GoString(S) system?: string;
  /** Deprecated, ignored. */
  @GoString(S) template?: string;
  /** `true` returns long arrays of model_info in full. */
  @GoBool(S) verbose?: boolean;
  /** Merged into the PARAMETER lines of the output. */
  @GoMap(S) options?: Record<string, unknown>;
}
